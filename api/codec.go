package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

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

// bind decodes the request body into v, strictly: unknown fields, trailing
// bytes and type mismatches are EINVALID with a message naming the problem.
func bind(c echo.Context, v any) error {
	req := c.Request()
	body, err := io.ReadAll(req.Body)
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return saver.Errorf(saver.ETOOLARGE, "Request body is over the limit of %d bytes.", maxErr.Limit)
		}
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he
		}
		return saver.Errorf(saver.EINVALID, "Cannot read request body: %v.", err)
	}
	if len(body) == 0 {
		return saver.Errorf(saver.EINVALID, "Request body is empty.")
	}
	switch mt := mediaType(req.Header.Get(echo.HeaderContentType)); {
	case isMsgpack(mt):
		return decodeMsgpack(body, v)
	case mt == mimeJSON || mt == "":
		return decodeJSON(body, v)
	default:
		return echo.NewHTTPError(http.StatusUnsupportedMediaType,
			fmt.Sprintf("Content-Type %q is not supported; send %s or %s.", mt, mimeMsgpack, mimeJSON))
	}
}

func decodeMsgpack(body []byte, v any) error {
	dec := msgpack.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields(true)
	if err := dec.Decode(v); err != nil {
		return saver.Errorf(saver.EINVALID, "Malformed msgpack body: %v.", err)
	}
	if _, err := dec.PeekCode(); err != io.EOF {
		return saver.Errorf(saver.EINVALID, "Malformed msgpack body: trailing data after the first value.")
	}
	return nil
}

func decodeJSON(body []byte, v any) error {
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
// Accept first, then the request's Content-Type, then JSON.
func respond(c echo.Context, status int, v any) error {
	if wantsMsgpack(c.Request()) {
		b, err := msgpack.Marshal(v)
		if err != nil {
			return fmt.Errorf("api: encode msgpack response: %w", err)
		}
		return c.Blob(status, mimeMsgpack, b)
	}
	return c.JSON(status, v)
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
