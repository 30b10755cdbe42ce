package awsx

import (
	"maps"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Expr is a condition, update or projection expression with its
// placeholders. Each builder names its placeholders with its own prefix, so
// that a condition and an update built apart can share one request (see
// Merge).
type Expr struct {
	Text   string
	Names  map[string]string // placeholder -> attribute
	Values Item              // placeholder -> value

	prefix string
	byName map[string]string // attribute -> placeholder
}

// NewExpr returns an empty expression whose placeholders start with prefix.
func NewExpr(prefix string) *Expr {
	return &Expr{prefix: prefix, Names: map[string]string{}, Values: Item{}, byName: map[string]string{}}
}

// Name returns the placeholder of an attribute name, the same one each time.
func (e *Expr) Name(attr string) string {
	if p, ok := e.byName[attr]; ok {
		return p
	}
	p := "#" + e.prefix + strconv.Itoa(len(e.Names))
	e.Names[p], e.byName[attr] = attr, p
	return p
}

// Path returns the placeholder path of a nested attribute: a.b.
func (e *Expr) Path(attrs ...string) string {
	out := ""
	for i, a := range attrs {
		if i > 0 {
			out += "."
		}
		out += e.Name(a)
	}
	return out
}

// Value returns a new placeholder for v.
func (e *Expr) Value(v types.AttributeValue) string {
	p := ":" + e.prefix + strconv.Itoa(len(e.Values))
	e.Values[p] = v
	return p
}

// Merge returns the names and values of the expressions together, nil maps
// when there are none (DynamoDB refuses empty ones).
func Merge(es ...*Expr) (map[string]string, Item) {
	var (
		names  map[string]string
		values Item
	)
	for _, e := range es {
		if e == nil {
			continue
		}
		if len(e.Names) > 0 {
			if names == nil {
				names = map[string]string{}
			}
			maps.Copy(names, e.Names)
		}
		if len(e.Values) > 0 {
			if values == nil {
				values = Item{}
			}
			maps.Copy(values, e.Values)
		}
	}
	return names, values
}
