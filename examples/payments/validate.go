package payments

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// decodeStrict decodes a JSON object body, keeping numbers exact.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return shapeError(err)
	}
	return nil
}

// shapeError says for people what is wrong with a body's shape: which member has the wrong kind
// of value, in JSON's words, never the decoder's (which names Go's types).
func shapeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) {
		return errors.New("the body must be a JSON object")
	}
	got, _, _ := strings.Cut(typeErr.Value, " ") // "number 1.5" is a number
	if typeErr.Field == "" {
		return fmt.Errorf("the body must be a JSON object, not %s", withArticle(got))
	}
	return fmt.Errorf("%s must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type), withArticle(got))
}

// jsonKind is what JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == reflect.TypeFor[json.Number]() {
		return "a number"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

func withArticle(kind string) string {
	switch kind {
	case "array", "object":
		return "an " + kind
	case "bool":
		return "true or false"
	case "":
		return "that"
	}
	return "a " + kind
}

// positiveAmount checks a JSON value is a number (not a string), a whole number of minor units
// above zero.
func positiveAmount(field string, raw json.RawMessage) (int64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, fmt.Errorf("%s is required", field)
	}
	var n json.Number
	if raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		return 0, fmt.Errorf("%s must be a number", field)
	}
	v, err := wholeNumber(string(n))
	if err != nil {
		return 0, fmt.Errorf("%s %w", field, err)
	}
	if v <= 0 {
		return 0, fmt.Errorf("%s must be greater than 0", field)
	}
	return v, nil
}

// wholeNumber reads a JSON number exactly. 5000, 5000.0, 5e3 and 500000e-2 are one value (and
// one fingerprint), so every spelling of a whole number is taken; 4503599627370497.5 is not
// whole, though a double (which has no room for the .5) would say it is.
func wholeNumber(lit string) (int64, error) {
	if v, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return v, nil // the usual spelling
	}
	mantissa, exp := lit, 0
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mantissa = lit[:i]
		var err error
		if exp, err = strconv.Atoi(lit[i+1:]); err != nil {
			// Beyond int64 or below 1 either way, unless the mantissa is 0.
			exp = math.MaxInt32
			if lit[i+1] == '-' {
				exp = math.MinInt32
			}
		}
	}
	sign := ""
	if strings.HasPrefix(mantissa, "-") {
		sign, mantissa = "-", mantissa[1:]
	}
	whole, frac, _ := strings.Cut(mantissa, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	if digits == "" {
		return 0, nil
	}
	trimmed := strings.TrimRight(digits, "0")
	// value = digits × 10^(exp − len(frac)) = trimmed × 10^shift
	shift := int64(exp) - int64(len(frac)) + int64(len(digits)-len(trimmed))
	switch {
	case shift < 0:
		return 0, errors.New("must be a whole number of minor units")
	case int64(len(trimmed))+shift > 19:
		return 0, errors.New("is too large")
	}
	v, err := strconv.ParseInt(sign+trimmed+strings.Repeat("0", int(shift)), 10, 64)
	if err != nil {
		return 0, errors.New("is too large")
	}
	return v, nil
}

// validateObject checks a body is a JSON object (null is not).
func validateObject(body []byte) error {
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil || v == nil {
		return errors.New("body must be a JSON object")
	}
	return nil
}

var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)

func checkCurrency(c string) error {
	if !currencyCode.MatchString(c) {
		return errors.New("currency must be a three-letter ISO 4217 code such as USD")
	}
	return nil
}
