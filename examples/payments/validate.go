package payments

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"

	"github.com/google/uuid"
)

// decodeStrict decodes a JSON object body, keeping numbers exact.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("body does not match the expected shape: %v", err)
	}
	return nil
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
	// 5000, 5000.0 and 5e3 are one value (and one fingerprint): accept every spelling of a
	// whole number.
	v, err := n.Int64()
	if err != nil {
		f, ferr := n.Float64()
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, fmt.Errorf("%s must be a whole number of minor units", field)
		}
		v = int64(f)
	}
	if v <= 0 {
		return 0, fmt.Errorf("%s must be greater than 0", field)
	}
	return v, nil
}

var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)

func checkCurrency(c string) error {
	if !currencyCode.MatchString(c) {
		return errors.New("currency must be a three-letter ISO 4217 code such as USD")
	}
	return nil
}

func newID(prefix string) string { return prefix + "_" + uuidV7() }

func uuidV7() string { return uuid.Must(uuid.NewV7()).String() }
