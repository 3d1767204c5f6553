package supervision

import "fmt"

// Limits bound what one observation sends to the judge, in characters
// (Unicode code points) and files. Longer output, diffs and repository
// status are cut to their tail and mark the evidence truncated; a task or
// instructions over TextChars, or a state over MaxStateChars, make the
// supervisor abstain.
type Limits struct {
	TextChars     int `json:"text_chars"`
	DiffChars     int `json:"diff_chars"`
	MaxFiles      int `json:"max_files"`
	MaxStateChars int `json:"max_state_chars"`
}

// Fixed limits.
const (
	maxRecentEvents  = 32
	maxFileNameChars = 1024
	omittedPrefix    = "[earlier content omitted]\n"
)

// DefaultLimits returns 12,000 text, 30,000 diff characters, 100 files and
// 100,000 characters of state.
func DefaultLimits() Limits {
	return Limits{TextChars: 12000, DiffChars: 30000, MaxFiles: 100, MaxStateChars: 100000}
}

// validate requires every limit to be at least 1.
func (l Limits) validate() error {
	if l.TextChars < 1 || l.DiffChars < 1 || l.MaxFiles < 1 || l.MaxStateChars < 1 {
		return fmt.Errorf("%w: limits must all be at least 1: %+v", ErrInvalidConfig, l)
	}
	return nil
}

// tail keeps a value within limit characters as is; otherwise it returns
// the omission prefix followed by the last limit characters.
func tail(s string, limit int) string {
	r := []rune(s)
	if len(r) <= limit {
		return s
	}
	return omittedPrefix + string(r[len(r)-limit:])
}

func runeLen(s string) int { return len([]rune(s)) }
