package dashboard

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClaimedIdentity(t *testing.T) {
	tests := []struct {
		name   string
		claims map[string]any
		want   identity
		err    bool
	}{
		{"email", map[string]any{"email": "a@example.com", "email_verified": true, "preferred_username": "a"}, identity{Name: "a@example.com"}, false},
		{"email, verification not stated", map[string]any{"email": "a@example.com"}, identity{Name: "a@example.com"}, false},
		{"unverified email", map[string]any{"email": "a@example.com", "email_verified": false, "preferred_username": "a"}, identity{Name: "a"}, false},
		{"username", map[string]any{"preferred_username": "a"}, identity{Name: "a"}, false},
		{"groups", map[string]any{"preferred_username": "a", "grp": []any{"x", "y", "x", 3}}, identity{Name: "a", Groups: []string{"x", "y"}}, false},
		{"groups as a string", map[string]any{"preferred_username": "a", "grp": "x, y"}, identity{Name: "a", Groups: []string{"x", "y"}}, false},
		{"nobody", map[string]any{"sub": "123", "email": "a@example.com", "email_verified": false}, identity{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := claimedIdentity(tt.claims, "grp")
			if tt.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestLocalPath(t *testing.T) {
	for in, want := range map[string]string{
		"": "/", "/": "/", "/job?id=a%2Fb": "/job?id=a%2Fb", "/waiting": "/waiting",
		"//evil.example": "/", "/\\evil.example": "/", "https://evil.example/": "/", "evil": "/", "/auth/login": "/",
	} {
		assert.Equal(t, want, localPath(in), in)
	}
}
