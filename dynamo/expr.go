package dynamo

import (
	"maps"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// expr is a condition or update expression with its placeholders. Each
// builder names its placeholders with its own prefix, so that a condition and
// an update built apart can share one request (see merge).
type expr struct {
	text   string
	prefix string
	names  map[string]string // placeholder -> attribute
	values item              // placeholder -> value
	byName map[string]string // attribute -> placeholder
}

func newExpr(prefix string) *expr {
	return &expr{prefix: prefix, names: map[string]string{}, values: item{}, byName: map[string]string{}}
}

// name returns the placeholder of an attribute name, the same one each time.
func (e *expr) name(attr string) string {
	if p, ok := e.byName[attr]; ok {
		return p
	}
	p := "#" + e.prefix + strconv.Itoa(len(e.names))
	e.names[p], e.byName[attr] = attr, p
	return p
}

// path returns the placeholder path of a nested attribute: a.b.
func (e *expr) path(attrs ...string) string {
	out := ""
	for i, a := range attrs {
		if i > 0 {
			out += "."
		}
		out += e.name(a)
	}
	return out
}

// value returns a new placeholder for v.
func (e *expr) value(v types.AttributeValue) string {
	p := ":" + e.prefix + strconv.Itoa(len(e.values))
	e.values[p] = v
	return p
}

// merge returns the names and values of the expressions together, nil maps
// when there are none (DynamoDB refuses empty ones).
func merge(es ...*expr) (map[string]string, item) {
	var (
		names  map[string]string
		values item
	)
	for _, e := range es {
		if e == nil {
			continue
		}
		if len(e.names) > 0 {
			if names == nil {
				names = map[string]string{}
			}
			maps.Copy(names, e.names)
		}
		if len(e.values) > 0 {
			if values == nil {
				values = item{}
			}
			maps.Copy(values, e.values)
		}
	}
	return names, values
}
