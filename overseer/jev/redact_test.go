package jev_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

func TestRedaction(t *testing.T) {
	assert.Equal(t, "key [REDACTED] and [REDACTED]", jev.Redact("key sk-1 and sk-1", "sk-1"))
	assert.Equal(t, "nothing to hide", jev.Redact("nothing to hide", ""))
	assert.Equal(t, "héllo", jev.Clip("héllo", 10))
	assert.Equal(t, "h…", jev.Clip("héllo", 2), "never cuts inside a rune")
	assert.Equal(t, "https://u:xxxxx@judge/v1", jev.RedactURL("https://u:pw@judge/v1"))

	body := errors.New("body quoted sk-1")
	for _, sentinel := range []error{jev.ErrInvalidAnswer, jev.ErrRejected} {
		err := jev.RedactError(fmt.Errorf("%w: %w", sentinel, body), "sk-1")
		assert.ErrorIs(t, err, sentinel, "the classification survives")
		assert.NotErrorIs(t, err, body, "the error that quotes the body does not")
		assert.NotContains(t, err.Error(), "sk-1")
	}
	plain := jev.RedactError(body, "sk-1")
	assert.False(t, errors.Is(plain, jev.ErrInvalidAnswer) || errors.Is(plain, jev.ErrRejected))
}
