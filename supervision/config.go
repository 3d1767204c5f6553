package supervision

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

// Config is a validated supervision configuration, as [ParseConfig] reads
// it from a document {"jev": {"supervision": {…}}}. Zero Budget, Limits,
// Schedule and Version mean their defaults.
type Config struct {
	Mode       Mode
	Version    string
	Budget     time.Duration
	Thresholds Thresholds
	Schedule   Schedule
	Limits     Limits
}

// configKeys are the only keys accepted under jev.supervision.
var configKeys = []string{"mode", "version", "budgetMillis", "threshold", "rejectionThreshold", "minIntervalMillis",
	"periodicIntervalMillis", "maxAssessments", "maxConsecutiveFailures", "maxTextChars", "maxDiffChars", "maxFiles", "maxStateChars"}

// purposes is the whitelist of the top-level jev object.
var purposes = []string{"supervision"}

type intRange struct {
	def, min, max int64
}

var intKeys = map[string]intRange{
	"budgetMillis":           {jev.DefaultBudget.Milliseconds(), 1, jev.MaxBudget.Milliseconds()},
	"maxTextChars":           {12000, 1, 12000},
	"maxDiffChars":           {30000, 1, 30000},
	"maxFiles":               {100, 1, 100},
	"maxStateChars":          {100000, 1, 100000},
	"minIntervalMillis":      {5000, 1000, 60000},
	"periodicIntervalMillis": {30000, 1000, 300000},
	"maxAssessments":         {60, 1, 120},
	"maxConsecutiveFailures": {3, 1, 10},
}

// ParseConfig reads and validates a configuration document. Unknown keys,
// secrets and endpoint overrides are rejected (they are simply not allowed
// keys); a missing mode means OFF; when enabled both thresholds are
// required; every integer is range-checked. The error names the key.
func ParseConfig(data []byte) (Config, error) {
	var top map[string]json.RawMessage
	if err := strictDecode(data, &top); err != nil {
		return Config{}, fmt.Errorf("%w: not a JSON object: %v", ErrInvalidConfig, err)
	}
	for k := range top {
		if k != "jev" {
			return Config{}, fmt.Errorf("%w: unknown top-level key %q: put supervision settings under jev.supervision", ErrInvalidConfig, k)
		}
	}
	var jevObj map[string]json.RawMessage
	if raw, ok := top["jev"]; ok {
		if err := strictDecode(raw, &jevObj); err != nil {
			return Config{}, fmt.Errorf("%w: jev must be an object", ErrInvalidConfig)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(jevObj)) {
		if !slices.Contains(purposes, k) {
			return Config{}, fmt.Errorf("%w: unknown jev purpose %q", ErrInvalidConfig, k)
		}
	}
	var sup map[string]json.RawMessage
	if raw, ok := jevObj["supervision"]; ok {
		if err := strictDecode(raw, &sup); err != nil || sup == nil {
			return Config{}, fmt.Errorf("%w: jev.supervision must be an object", ErrInvalidConfig)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(sup)) {
		if !slices.Contains(configKeys, k) {
			return Config{}, fmt.Errorf("%w: Unknown supervision setting %q (keys, secrets and endpoint overrides are never accepted)", ErrInvalidConfig, k)
		}
	}
	cfg := Config{Mode: ModeOff, Version: defaultRecordVersion}
	if raw, ok := sup["mode"]; ok {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return Config{}, fmt.Errorf("%w: mode must be a string", ErrInvalidConfig)
		}
		m, err := parseMode(s)
		if err != nil {
			return Config{}, err
		}
		cfg.Mode = m
	}
	if raw, ok := sup["version"]; ok {
		if err := json.Unmarshal(raw, &cfg.Version); err != nil || strings.TrimSpace(cfg.Version) == "" {
			return Config{}, fmt.Errorf("%w: version must be a non-blank string", ErrInvalidConfig)
		}
	}
	ints := map[string]int64{}
	for k, r := range intKeys {
		ints[k] = r.def
		raw, ok := sup[k]
		if !ok {
			continue
		}
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) {
			return Config{}, fmt.Errorf("%w: %s must be an integer", ErrInvalidConfig, k)
		}
		if int64(f) < r.min || int64(f) > r.max {
			return Config{}, fmt.Errorf("%w: %s = %v outside %d…%d", ErrInvalidConfig, k, f, r.min, r.max)
		}
		ints[k] = int64(f)
	}
	cfg.Budget = time.Duration(ints["budgetMillis"]) * time.Millisecond
	cfg.Schedule = Schedule{
		MinInterval:            time.Duration(ints["minIntervalMillis"]) * time.Millisecond,
		Period:                 time.Duration(ints["periodicIntervalMillis"]) * time.Millisecond,
		MaxAssessments:         int(ints["maxAssessments"]),
		MaxConsecutiveFailures: int(ints["maxConsecutiveFailures"]),
	}
	cfg.Limits = Limits{TextChars: int(ints["maxTextChars"]), DiffChars: int(ints["maxDiffChars"]),
		MaxFiles: int(ints["maxFiles"]), MaxStateChars: int(ints["maxStateChars"])}
	if err := cfg.Schedule.validate(); err != nil {
		return Config{}, err
	}
	if cfg.Mode == ModeOff {
		return cfg, nil
	}
	yes, err := requiredNumber(sup, "threshold")
	if err != nil {
		return Config{}, err
	}
	no, err := requiredNumber(sup, "rejectionThreshold")
	if err != nil {
		return Config{}, err
	}
	cfg.Thresholds = Thresholds{No: no, Yes: yes}
	if err := cfg.Thresholds.validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Supervisor builds the supervisor this configuration describes, or nil
// when the mode is ModeOff (which builds nothing).
func (c Config) Supervisor(judge jev.Judge, onRecord func(Record)) (*Supervisor, error) {
	if c.Mode == ModeOff {
		return nil, nil
	}
	return New(Options{Mode: c.Mode, Judge: judge, Thresholds: c.Thresholds, Limits: c.Limits, Budget: c.Budget,
		Version: c.Version, OnRecord: onRecord})
}

func requiredNumber(m map[string]json.RawMessage, key string) (float64, error) {
	raw, ok := m[key]
	if !ok {
		return 0, fmt.Errorf("%w: %s is required when supervision is enabled", ErrInvalidConfig, key)
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, fmt.Errorf("%w: %s must be a number", ErrInvalidConfig, key)
	}
	return f, nil
}

func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data")
	}
	return nil
}
