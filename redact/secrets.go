package redact

import (
	"regexp"
	"strings"
)

// The secret rules: every TEXT and BLOB value of every table is scanned
// with them (scanCells), names analysis reads included. A rule replaces
// only the secret part of a value (the token, the password, the key
// block) with SecretMask, so a kernel or range name that holds one keeps
// its shape. Rules are named in the --report output; the values they
// match are never printed.
//
//	aws-access-key       AKIA/ASIA/ABIA/ACCA + 16 upper-case letters or digits
//	aws-secret-key       40 base64 characters after aws_secret_access_key, secret_key, ...
//	gcp-api-key          AIza + 35 characters
//	gcp-oauth-token      ya29. + 20 or more characters
//	azure-key            AccountKey=, SharedAccessKey=, sig= (connection strings, SAS URLs)
//	github-token         ghp_/gho_/ghu_/ghs_/ghr_ + 30 or more, github_pat_ + 30 or more
//	gitlab-token         glpat- + 20 or more
//	huggingface-token    hf_ + 30 or more letters and digits
//	slack-token          xoxa-/xoxb-/xoxp-/xoxr-/xoxs-/xoxe- + 10 or more
//	openai-key           sk-, sk-proj-, sk-ant- + 20 or more; Stripe sk_live_/rk_live_/sk_test_
//	jwt                  eyJ… . eyJ… . signature (three base64url parts)
//	private-key          -----BEGIN … PRIVATE KEY----- to its END line (or the end of the value)
//	url-credentials      scheme://user:password@ (user and password replaced)
//	authorization        Authorization: / Proxy-Authorization: [Basic|Bearer|Token|…] VALUE
//	bearer               Bearer VALUE (8 or more token characters)
//	secret-assignment    NAME=VALUE, NAME: VALUE, "NAME": "VALUE" where NAME looks like a
//	                     credential (secretName); in names analysis reads only a value that
//	                     is not a plain number
//	secret-flag          --NAME VALUE where NAME looks like a credential (same exception)
type secretRule struct {
	name string
	re   *regexp.Regexp
	// group is the submatch replaced (0: the whole match); each of
	// groups is replaced when set.
	groups []int
	// trig are lower-case literals one of which a value must hold for
	// the rule to be tried.
	trig []string
}

var secretRules = []secretRule{
	{name: "private-key", re: regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)`),
		groups: []int{0}, trig: []string{"private key"}},
	{name: "url-credentials", re: regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.\-]*://([^\s/?#@:"'<>\x00]*):([^\s/?#@"'<>\x00]+)@`),
		groups: []int{1, 2}, trig: []string{"://"}},
	{name: "jwt", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*`),
		groups: []int{0}, trig: []string{"eyj"}},
	{name: "aws-access-key", re: regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`),
		groups: []int{0}, trig: []string{"akia", "asia", "abia", "acca"}},
	{name: "aws-secret-key", re: regexp.MustCompile(`(?i)(?:aws|secret)[A-Za-z0-9_\-]*(?:key|secret)["']?\s*[=:\s]\s*["']?([A-Za-z0-9/+]{40})\b`),
		groups: []int{1}, trig: []string{"aws", "secret"}},
	{name: "gcp-api-key", re: regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}`),
		groups: []int{0}, trig: []string{"aiza"}},
	{name: "gcp-oauth-token", re: regexp.MustCompile(`\bya29\.[0-9A-Za-z_\-]{20,}`),
		groups: []int{0}, trig: []string{"ya29."}},
	{name: "azure-key", re: regexp.MustCompile(`(?i)\b(?:AccountKey|SharedAccessKey|sig)=([A-Za-z0-9+/%]{20,}[A-Za-z0-9+/%=]*)`),
		groups: []int{1}, trig: []string{"accountkey", "sharedaccesskey", "sig="}},
	{name: "github-token", re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`),
		groups: []int{0}, trig: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
	{name: "gitlab-token", re: regexp.MustCompile(`\bglpat-[A-Za-z0-9_\-]{20,}`),
		groups: []int{0}, trig: []string{"glpat-"}},
	{name: "huggingface-token", re: regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}`),
		groups: []int{0}, trig: []string{"hf_"}},
	{name: "slack-token", re: regexp.MustCompile(`\bxox[abprse]-[A-Za-z0-9\-]{10,}`),
		groups: []int{0}, trig: []string{"xox"}},
	{name: "openai-key", re: regexp.MustCompile(`\b(?:sk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_\-]{20,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,})`),
		groups: []int{0}, trig: []string{"sk-", "k_live_", "k_test_"}},
	{name: "authorization", re: regexp.MustCompile(`(?i)\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:basic|bearer|token|digest|negotiate|apikey|sharedkey)\s+)?([^\s"',;\x00]+)`),
		groups: []int{1}, trig: []string{"authorization"}},
	{name: "bearer", re: regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{8,}[A-Za-z0-9\-._~+/=]*)`),
		groups: []int{1}, trig: []string{"bearer"}},
}

// secretNameWords mark a NAME in NAME=VALUE or --NAME VALUE as a
// credential when they occur anywhere in it; secretNameParts when they
// are a whole part of it (split at _ - .; case changes are not split),
// outside names analysis reads.
var (
	secretNameWords = []string{"PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "TOKEN", "APIKEY", "API_KEY", "API-KEY",
		"ACCESSKEY", "ACCESS_KEY", "ACCESS-KEY", "PRIVATEKEY", "PRIVATE_KEY", "PRIVATE-KEY", "CREDENTIAL", "COOKIE",
		"ACCOUNTKEY", "ACCOUNT_KEY", "SESSIONKEY", "SESSION_KEY", "CLIENTKEY", "CLIENT_KEY", "SIGNINGKEY", "SIGNING_KEY"}
	secretNameParts = map[string]bool{"AUTH": true, "PASS": true, "PW": true}
	// secretNameTrig are the lower-case literals that a value must hold
	// for the name rules to be tried.
	secretNameTrig = []string{"passw", "passphrase", "secret", "token", "key", "credential", "cookie", "auth", "pass", "pw"}
)

// secretName reports whether a variable, key or flag name looks like it
// names a credential. In names analysis reads (strict) the short parts
// (AUTH, PASS, PW) do not count: "pass: forward" is a range name there.
func secretName(k string, strict bool) bool {
	u := strings.ToUpper(strings.Trim(k, `-"' `))
	if u == "" {
		return false
	}
	for _, w := range secretNameWords {
		if strings.Contains(u, w) {
			return true
		}
	}
	if strict {
		return false
	}
	for _, p := range strings.FieldsFunc(u, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		if secretNameParts[p] {
			return true
		}
	}
	return false
}

var (
	// assignKey finds NAME followed by = or : (the value is read after it).
	assignKey = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_.\-]*)["']?[ \t]*([=:])`)
	// flagName finds --NAME or -NAME followed by white space or a NUL (an
	// argument list).
	flagName = regexp.MustCompile(`(?:^|[\s\x00"'])(--?[A-Za-z][A-Za-z0-9_\-]*)[ \t\x00]+`)
	number   = regexp.MustCompile(`^[+\-]?[0-9][0-9.,eE+\-]*$`)
)

// valueEnd is where a secret value after NAME= stops.
func valueEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', ',', ';', '&', '<', '>', '}', ']', ')', 0:
		return true
	}
	return false
}

// hit counts one rule's replacements in one value.
type hit struct {
	rule string
	n    int
}

// scanner applies the secret rules to one value.
type scanner struct {
	lower []byte
}

// scan returns s with the secrets the rules find replaced and the rules
// that fired. strict is for names analysis reads: the name rules skip
// plain-number values there (tokens=4096, step: 5 tokens: 128).
func (sc *scanner) scan(s string, strict bool) (string, []hit) {
	if len(s) < 4 {
		return s, nil
	}
	sc.lower = appendLower(sc.lower[:0], s)
	lower := string(sc.lower) // one copy per value
	var hits []hit
	for i := range secretRules {
		r := &secretRules[i]
		if !containsAny(lower, r.trig) {
			continue
		}
		ns, n := replaceGroups(r.re, s, r.groups)
		if n > 0 {
			s = ns
			hits = append(hits, hit{r.name, n})
			lower = strings.ToLower(s)
		}
	}
	if containsAny(lower, secretNameTrig) {
		if ns, n := replaceAssignments(s, strict); n > 0 {
			s = ns
			hits = append(hits, hit{"secret-assignment", n})
		}
		if ns, n := replaceFlags(s, strict); n > 0 {
			s = ns
			hits = append(hits, hit{"secret-flag", n})
		}
	}
	return s, hits
}

func appendLower(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

func containsAny(s string, lits []string) bool {
	for _, l := range lits {
		if strings.Contains(s, l) {
			return true
		}
	}
	return false
}

// replaceGroups replaces the given submatches of every match of re in s
// with SecretMask and counts the matches that changed something.
func replaceGroups(re *regexp.Regexp, s string, groups []int) (string, int) {
	ms := re.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s, 0
	}
	var b strings.Builder
	last, n := 0, 0
	for _, m := range ms {
		changed := false
		for _, g := range groups {
			lo, hi := m[2*g], m[2*g+1]
			if lo < 0 || hi <= lo || lo < last || s[lo:hi] == SecretMask {
				continue
			}
			b.WriteString(s[last:lo])
			b.WriteString(SecretMask)
			last = hi
			changed = true
		}
		if changed {
			n++
		}
	}
	if n == 0 {
		return s, 0
	}
	b.WriteString(s[last:])
	return b.String(), n
}

// replaceAssignments masks the VALUE of NAME=VALUE and NAME: VALUE (and
// "NAME": "VALUE") where NAME looks like a credential.
func replaceAssignments(s string, strict bool) (string, int) {
	return maskSpans(s, assignKey.FindAllStringSubmatchIndex(s, -1), func(m []int, last int) (int, int, bool) {
		if m[0] < last || !secretName(s[m[2]:m[3]], strict) {
			return 0, 0, false
		}
		sep := s[m[4]]
		i := m[1]
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i < len(s) && (s[i] == '"' || s[i] == '\'') {
			i++
		}
		if sep == ':' && i < len(s) && s[i] == ':' {
			return 0, 0, false // C++ scope, not a key
		}
		j := valueAt(s, i)
		v := s[i:j]
		return i, j, !(v == "" || v == SecretMask || strings.HasPrefix(v, SecretMask) || (strict && number.MatchString(v)))
	})
}

// replaceFlags masks the argument after --NAME where NAME looks like a
// credential (--password hunter2, --api-key X).
func replaceFlags(s string, strict bool) (string, int) {
	return maskSpans(s, flagName.FindAllStringSubmatchIndex(s, -1), func(m []int, last int) (int, int, bool) {
		if m[2] < last || !secretName(s[m[2]:m[3]], strict) {
			return 0, 0, false
		}
		i := m[1]
		if i < len(s) && (s[i] == '"' || s[i] == '\'') {
			i++
		}
		if i >= len(s) || s[i] == '-' {
			return 0, 0, false
		}
		j := valueAt(s, i)
		v := s[i:j]
		return i, j, !(v == "" || v == SecretMask || (strict && number.MatchString(v)))
	})
}

// valueAt is the end of the value starting at s[i].
func valueAt(s string, i int) int {
	for i < len(s) && !valueEnd(s[i]) {
		i++
	}
	return i
}

// maskSpans replaces, for each match m of ms (in order), the span s[i:j]
// that span gives (when ok, and given where the last replacement ended)
// by SecretMask; it returns the result and the number replaced.
func maskSpans(s string, ms [][]int, span func(m []int, last int) (i, j int, ok bool)) (string, int) {
	var b strings.Builder
	last, n := 0, 0
	for _, m := range ms {
		i, j, ok := span(m, last)
		if !ok {
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(SecretMask)
		last = j
		n++
	}
	if n == 0 {
		return s, 0
	}
	b.WriteString(s[last:])
	return b.String(), n
}
