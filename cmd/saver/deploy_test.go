package main

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/saver-dev/saver/dynamo"
	"github.com/saver-dev/saver/s3offload"
)

// TestIAMPolicyCoversTheStores checks deploy/cloudformation.yaml's policy
// against the SDK calls the stores make (their narrow API interfaces), so a
// new call cannot ship with a policy that denies it in production.
func TestIAMPolicyCoversTheStores(t *testing.T) {
	b, err := os.ReadFile("../../deploy/cloudformation.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("cloudformation.yaml does not parse: %v", err)
	}
	allowed := map[string]bool{}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && (strings.HasPrefix(n.Value, "dynamodb:") || strings.HasPrefix(n.Value, "s3:")) {
			allowed[n.Value] = true
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&doc)

	// Calls made only by `saver init`, which an operator runs with broader
	// rights (or replaces with this template), and calls authorised through
	// other actions.
	exempt := map[string]bool{
		"dynamodb:CreateTable":        true,
		"dynamodb:UpdateTimeToLive":   true,
		"dynamodb:TransactWriteItems": true, // authorised by the actions it carries
		"s3:HeadBucket":               true, // authorised by s3:ListBucket
		"s3:ListObjectsV2":            true, // authorised by s3:ListBucket
		"s3:CopyObject":               true, // authorised by s3:GetObject + s3:PutObject
		"s3:DeleteObjects":            true, // authorised by s3:DeleteObject
	}
	for prefix, api := range map[string]reflect.Type{
		"dynamodb": reflect.TypeFor[dynamo.DynamoAPI](),
		"s3":       reflect.TypeFor[s3offload.S3API](),
	} {
		for i := range api.NumMethod() {
			action := prefix + ":" + api.Method(i).Name
			if !allowed[action] && !exempt[action] {
				t.Errorf("the IAM policy does not allow %s, which the store calls", action)
			}
		}
	}
	for _, need := range []string{"s3:ListBucket", "s3:GetObject", "s3:PutObject", "s3:DeleteObject"} {
		if !allowed[need] {
			t.Errorf("the IAM policy lacks %s", need)
		}
	}
}
