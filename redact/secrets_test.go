package redact

import (
	"strings"
	"testing"
)

// Examples of every secret rule: the secret goes, the text around it stays.
func TestSecretRules(t *testing.T) {
	const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAz1\nabc\n-----END RSA PRIVATE KEY-----"
	cases := []struct {
		rule, in, want string
		strict         bool
	}{
		{"aws-access-key", "key AKIAIOSFODNN7EXAMPLE used", "key REDACTED used", true},
		{"aws-access-key", "ASIAY34FZKBOKMUTVV7A", "REDACTED", false},
		{"aws-secret-key", "aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key REDACTED", false},
		{"gcp-api-key", "k=AIzaSyA-1234567890abcdefghijklmnopqrstu", "k=REDACTED", true},
		{"gcp-oauth-token", "ya29.a0AfH6SMBx1234567890abcdefg", "REDACTED", true},
		{"azure-key", "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=abcdefghijklmnopqrstuvwxyz0123456789ABCD==;", "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=REDACTED;", false},
		{"github-token", "git clone ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z0a", "git clone REDACTED", true},
		{"github-token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "REDACTED", true},
		{"gitlab-token", "glpat-xXyYzZ0123456789abcd", "REDACTED", true},
		{"huggingface-token", "login hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "login REDACTED", true},
		{"slack-token", "xoxb-1234567890-abcdefghij", "REDACTED", true},
		{"openai-key", "sk-proj-abcdefghijklmnopqrstuvwxyz012345", "REDACTED", true},
		{"openai-key", "sk_live_abcdefghijklmnop1234", "REDACTED", true},
		{"jwt", "token " + jwt + " ok", "token REDACTED ok", true},
		{"private-key", "key:\n" + pem + "\nrest", "key:\nREDACTED\nrest", false},
		{"private-key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA", "REDACTED", false},
		{"url-credentials", "fetch https://alice:hunter2@example.org/x.git", "fetch https://REDACTED:REDACTED@example.org/x.git", true},
		{"url-credentials", "postgres://svc:p4ss@db:5432/app", "postgres://REDACTED:REDACTED@db:5432/app", true},
		{"authorization", "Authorization: Basic YWxpY2U6aHVudGVyMg==", "Authorization: Basic REDACTED", false},
		{"authorization", `{"authorization": "tok123456"}`, `{"authorization": "REDACTED"}`, false},
		{"bearer", "curl -H 'x: Bearer abcdefghijkl.mnop'", "curl -H 'x: Bearer REDACTED'", true},
		// Token characters after the padding are the token's too (a fuzzed
		// "Bearer 00000000=0" left "REDACTED0", which a second pass changed).
		{"bearer", "Bearer 00000000=0 next", "Bearer REDACTED next", true},
		{"azure-key", "sig=abcdefghijklmnopqrstu=x&se=1", "sig=REDACTED&se=1", false},
		{"secret-assignment", "DB_PASSWORD=hunter2 next", "DB_PASSWORD=REDACTED next", true},
		{"secret-assignment", `{"api_key": "abc123"}`, `{"api_key": "REDACTED"}`, false},
		{"secret-assignment", "x=MY_TOKEN=abc", "x=MY_TOKEN=REDACTED", false},
		{"secret-assignment", "client_secret: s3cr3t", "client_secret: REDACTED", false},
		{"secret-flag", "train.py --api-key abc123 --lr 0.1", "train.py --api-key REDACTED --lr 0.1", false},
		{"secret-flag", "run --password hunter2", "run --password REDACTED", true},
		{"secret-flag", "python\x00x.py\x00--hf-token\x00abc123\x00--lr", "python\x00x.py\x00--hf-token\x00REDACTED\x00--lr", false},
	}
	var sc scanner
	for _, c := range cases {
		got, hits := sc.scan(c.in, c.strict)
		if got != c.want {
			t.Errorf("%s: scan(%q) = %q, want %q", c.rule, c.in, got, c.want)
		}
		found := false
		for _, h := range hits {
			found = found || h.rule == c.rule
		}
		if !found {
			t.Errorf("%s: scan(%q) fired %v, want %s", c.rule, c.in, hits, c.rule)
		}
	}
}

// Names analysis reads are left alone unless they hold a secret: C++
// scopes, numbers after token-like words, ordinary kernel and range names.
func TestSecretRulesKeepNames(t *testing.T) {
	names := []string{
		"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4, false>, true>(Flash_fwd_params)",
		"std::token_map::operator=(token const&)",
		"tokens=4096", "step: 5 tokens: 128", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
		"cudaDeviceSynchronize", "Memcpy HtoD (Pageable -> Device)", "hf_gemm_half_kernel", "mask-select-kernel",
		"GPU 0: NVIDIA H200 (UUID GPU-5b1c3a64-9e0f-4c55-8f2a-1b2c3d4e5f60)", "keys=12 authors=3",
		"https://example.org/docs/page", "--key-size 256", "ASIAN_LANG_MODEL", "AKIA", "pass: forward", "auth=on",
	}
	var sc scanner
	for _, n := range names {
		if got, hits := sc.scan(n, true); got != n {
			t.Errorf("scan(%q, strict) = %q (%v), want it unchanged", n, got, hits)
		}
	}
	// In metadata (not strict) NAME: VALUE counts, numbers too.
	for _, s := range []string{"password: 123456", "DB_PASS=hunter2", "--auth tok"} {
		if got, _ := sc.scan(s, false); !strings.Contains(got, SecretMask) {
			t.Errorf("metadata %q: %q, want it masked", s, got)
		}
	}
}

// FuzzScan: the scanner never panics, never grows a value without a
// replacement, and a second pass changes nothing (so a redacted copy
// redacts to itself).
func FuzzScan(f *testing.F) {
	for _, s := range []string{
		"Authorization: Bearer abcdefgh12345678", "DB_PASSWORD=x --token y", "https://u:p@h/",
		"-----BEGIN PRIVATE KEY-----\nabc", "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z0a", "token=:=:", "--api-key\x00",
		"x=MY_TOKEN=abc", "\xff\xfeAKIAIOSFODNN7EXAMPLE\x00",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, strict bool) {
		var sc scanner
		once, hits := sc.scan(s, strict)
		if once == s && len(hits) != 0 {
			t.Fatalf("scan(%q) reported %v without a change", s, hits)
		}
		if twice, h2 := sc.scan(once, strict); twice != once {
			t.Fatalf("scan not idempotent: %q -> %q -> %q (%v)", s, once, twice, h2)
		}
	})
}
