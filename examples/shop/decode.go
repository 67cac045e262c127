package shop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// decodeBody decodes a JSON object body into v, whose fields are strings and int64s, with
// messages for people: which member has the wrong kind of value, in JSON's words, never the
// decoder's (which names Go's types).
func decodeBody(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &typeErr) && typeErr.Field != "":
		want := "a string"
		if strings.HasPrefix(typeErr.Type.Kind().String(), "int") {
			want = "a whole number"
		}
		return fmt.Errorf("%s must be %s", typeErr.Field, want)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("the body has an unknown member %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return errors.New("the body must be a JSON object")
}
