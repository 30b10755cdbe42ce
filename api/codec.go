package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/saver-dev/saver"
)

// Media types the API speaks. msgpack is the client's wire format; JSON is
// there for curl and debugging.
const (
	mimeMsgpack = "application/msgpack"
	mimeJSON    = "application/json"
)

// mediaType returns the base media type of a header value, or "".
func mediaType(v string) string {
	mt, _, err := mime.ParseMediaType(v)
	if err != nil {
		return ""
	}
	return mt
}

func isMsgpack(mt string) bool {
	return mt == mimeMsgpack || mt == "application/x-msgpack" || mt == "application/vnd.msgpack"
}

// bind decodes the request body into v, strictly: unknown fields, field
// names in another case, keys given twice, trailing bytes and type mismatches
// are EINVALID with a message naming the problem. The body is scanned first
// (msgpackscan.go, jsonscan.go), so that no decoder allocates more than the
// body can hold or nests deeper than maxNesting; what it will take once
// decoded counts against the bytes all requests hold (holdDecoded) before
// the decoder runs.
func bind(c echo.Context, v any) error {
	req := c.Request()
	codec, err := requestCodec(req.Header)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(req.Body)
	if d, ok := c.Get(ctxKeyBodyTimeout).(time.Duration); ok {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return echo.NewHTTPError(http.StatusRequestTimeout, fmt.Sprintf("Request body did not arrive within %s.", d))
		}
		if err == nil {
			// The body is in: the deadline must not cut the connection's
			// background read, which cancels the request, during store work.
			if err := http.NewResponseController(c.Response()).SetReadDeadline(time.Time{}); err != nil {
				return fmt.Errorf("api: lift body deadline: %w", err)
			}
		}
	}
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return saver.Errorf(saver.ETOOLARGE, "Request body is over the limit of %d bytes.", maxErr.Limit)
		}
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he
		}
		var se *saver.Error
		if errors.As(err, &se) {
			return se // the body budget's 503
		}
		return saver.Errorf(saver.EINVALID, "Cannot read request body: %v.", err)
	}
	if len(body) == 0 {
		return saver.Errorf(saver.EINVALID, "Request body is empty.")
	}
	hold, _ := c.Get(ctxKeyHoldDecoded).(func(int) error)
	if codec == mimeMsgpack {
		return decodeMsgpack(body, v, hold)
	}
	return decodeJSON(body, v, hold)
}

// requestCodec tells which decoder a body's Content-Type asks for: msgpack,
// or JSON, also when the header is absent (curl). A header that does not
// parse, names another type or a charset other than UTF-8 is 415.
func requestCodec(h http.Header) (string, error) {
	vs := h.Values(echo.HeaderContentType)
	if len(vs) == 0 {
		return mimeJSON, nil
	}
	unsupported := func(format string, args ...any) error {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, fmt.Sprintf(format, args...)+
			fmt.Sprintf(" Send %s or %s.", mimeMsgpack, mimeJSON))
	}
	if len(vs) > 1 {
		return "", unsupported("%d Content-Type headers; give one.", len(vs))
	}
	mt, params, err := mime.ParseMediaType(vs[0])
	if err != nil {
		return "", unsupported("Content-Type %.100q does not parse: %v.", vs[0], err)
	}
	switch {
	case isMsgpack(mt):
		return mimeMsgpack, nil
	case mt == mimeJSON:
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			return "", unsupported("JSON bodies are UTF-8; charset %.40q is not supported.", cs)
		}
		return mimeJSON, nil
	}
	return "", unsupported("Content-Type %.100q is not supported.", mt)
}

// decodeMsgpack scans body, has hold (if any) take what it will take once
// decoded, and decodes it into v.
func decodeMsgpack(body []byte, v any, hold func(int) error) error {
	size, err := scanMsgpack(body, shapeOf(reflect.TypeOf(v), "msgpack"))
	if err != nil {
		return scanFailed("msgpack", err)
	}
	if hold != nil {
		if err := hold(size); err != nil {
			return err
		}
	}
	dec := msgpack.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields(true)
	if err := dec.Decode(v); err != nil {
		return saver.Errorf(saver.EINVALID, "Malformed msgpack body: %v.", err)
	}
	return nil
}

// scanFailed is the error for a body a scanner refused: 413 for one that
// would decode too large, 400 for anything else.
func scanFailed(codec string, err error) error {
	if se, ok := err.(*scanError); ok && se.tooLarge {
		return saver.Errorf(saver.ETOOLARGE, "Request body %v: send fewer elements per request.", err)
	}
	return saver.Errorf(saver.EINVALID, "Malformed %s body: %v.", codec, err)
}

// decodeJSON is decodeMsgpack for JSON. The decoder reads the body into a
// buffer of its own, which doubles as it fills: up to twice the body more
// while it decodes.
func decodeJSON(body []byte, v any, hold func(int) error) error {
	size, err := scanJSON(body, shapeOf(reflect.TypeOf(v), "json"))
	if err != nil {
		return scanFailed("JSON", err)
	}
	if hold != nil {
		if err := hold(size + 2*len(body)); err != nil {
			return err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return saver.Errorf(saver.EINVALID, "Malformed JSON body: %v.", err)
	}
	if dec.More() {
		return saver.Errorf(saver.EINVALID, "Malformed JSON body: trailing data after the first value.")
	}
	if _, err := dec.Token(); err != io.EOF {
		return saver.Errorf(saver.EINVALID, "Malformed JSON body: trailing data after the first value.")
	}
	return nil
}

// respond writes v with status in the media type the caller asked for:
// Accept first, then the request's Content-Type, then JSON. The encoding
// counts against the request's response budget, if it has one (encode).
func respond(c echo.Context, status int, v any) error {
	mt, b, err := encode(c, v)
	if err != nil {
		return err
	}
	return c.Blob(status, mt, b)
}

func wantsMsgpack(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get(echo.HeaderAccept), ",") {
		switch mt := mediaType(part); {
		case isMsgpack(mt):
			return true
		case mt == mimeJSON:
			return false
		}
	}
	return isMsgpack(mediaType(r.Header.Get(echo.HeaderContentType)))
}
