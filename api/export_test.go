package api

// WireColumns is the columns of tree entries as a client decodes them, for
// the tests of the routes (package api_test).
type WireColumns = wireColumns
