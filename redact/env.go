package redact

import (
	"regexp"
	"strings"
)

// Masks written in place of environment and secret values.
const (
	// EnvMask replaces an environment block none of whose entries is kept.
	EnvMask = "REDACTED-ENV"
	// SecretMask replaces a secret (a token in argv, a value after
	// --password, a metadata row named like a credential).
	SecretMask = "REDACTED"
)

// KeptEnv are the environment variables whose values survive redaction:
// the ones analysis reads to tell ranks and devices apart (rank detection
// in ingest/nsys and analyze reads RANK, OMPI_COMM_WORLD_RANK, PMI_RANK,
// PMIX_RANK, SLURM_PROCID, LOCAL_RANK, ... and the world sizes), and the
// few CUDA switches that change synchronization behaviour. Every other
// variable is dropped, whatever its name. A kept value must look like a
// number, list or device id (see safeEnvValue); anything else is dropped
// too.
var KeptEnv = map[string]bool{
	"RANK": true, "LOCAL_RANK": true, "WORLD_SIZE": true, "LOCAL_WORLD_SIZE": true,
	"GROUP_RANK": true, "ROLE_RANK": true, "NODE_RANK": true,
	"OMPI_COMM_WORLD_RANK": true, "OMPI_COMM_WORLD_SIZE": true, "OMPI_COMM_WORLD_LOCAL_RANK": true,
	"OMPI_COMM_WORLD_LOCAL_SIZE": true, "OMPI_COMM_WORLD_NODE_RANK": true,
	"PMI_RANK": true, "PMI_SIZE": true, "PMI_LOCAL_RANK": true, "PMI_LOCAL_SIZE": true,
	"PMIX_RANK": true, "PMIX_SIZE": true, "PMIX_LOCAL_RANK": true,
	"MV2_COMM_WORLD_RANK": true, "MV2_COMM_WORLD_SIZE": true, "MV2_COMM_WORLD_LOCAL_RANK": true,
	"PALS_RANKID": true, "PALS_LOCAL_RANKID": true, "PALS_NODEID": true,
	"SLURM_PROCID": true, "SLURM_LOCALID": true, "SLURM_NODEID": true, "SLURM_NTASKS": true,
	"SLURM_NPROCS": true, "SLURM_NNODES": true, "SLURM_STEP_NUM_TASKS": true,
	"CUDA_VISIBLE_DEVICES": true, "NVIDIA_VISIBLE_DEVICES": true, "GPU_DEVICE_ORDINAL": true,
	"ROCR_VISIBLE_DEVICES": true, "HIP_VISIBLE_DEVICES": true, "CUDA_DEVICE_ORDER": true,
	"CUDA_LAUNCH_BLOCKING": true, "CUDA_DEVICE_MAX_CONNECTIONS": true, "CUDA_MODULE_LOADING": true,
}

// safeEnvValue is what a kept variable's value may look like: ranks,
// sizes, device lists and GPU UUIDs. No paths, spaces or quotes.
var safeEnvValue = regexp.MustCompile(`^[A-Za-z0-9,._:()\-]{0,128}$`)

// secretWords mark a variable, flag or metadata row as a credential.
var secretWords = []string{"SECRET", "TOKEN", "KEY", "PASSW", "PASSPHRASE", "CREDENTIAL", "AUTH", "COOKIE", "PRIVATE", "SIGNATURE"}

// secretKey reports whether a variable or flag name looks like it holds a
// credential (*SECRET*, *TOKEN*, *KEY*, *PASSWORD*, *CREDENTIAL*, *AUTH*, ...).
func secretKey(k string) bool {
	u := strings.ToUpper(k)
	for _, w := range secretWords {
		if strings.Contains(u, w) {
			return true
		}
	}
	return false
}

// secretRowName is secretKey for metadata row names (META_DATA_*,
// TARGET_INFO_SYSTEM_ENV): there a bare KEY is common and harmless
// (HOTKEY_VALUE), so only the explicit credential words count.
var secretRowName = regexp.MustCompile(`(?i)secret|token|passw|passphrase|credential|auth|cookie|private|api_?key|access_?key|signature`)

// identityKeys name who and where: never kept, and their values are
// masked wherever else they occur.
var identityKeys = map[string]bool{
	"USER": true, "LOGNAME": true, "USERNAME": true, "USERDOMAIN": true, "USERDOMAIN_ROAMINGPROFILE": true,
	"SLURM_JOB_USER": true, "SUDO_USER": true, "PBS_O_LOGNAME": true, "LSB_USER": true,
	"HOME": true, "USERPROFILE": true, "HOMEPATH": true, "MAIL": true,
	"HOSTNAME": true, "HOST": true, "COMPUTERNAME": true, "LOGONSERVER": true,
	"SSH_CONNECTION": true, "SSH_CLIENT": true, "SSH_TTY": true,
}

// keepEnv reports whether variable k with value v survives redaction.
func keepEnv(k, v string) bool {
	return KeptEnv[k] && !secretKey(k) && !identityKeys[k] && safeEnvValue.MatchString(unquote(v))
}

// unquote strips one pair of double quotes: META_DATA_CAPTURE stores
// NAME="VALUE".
func unquote(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		return v[1 : len(v)-1]
	}
	return v
}

// envKey is a POSIX-style variable name: the strict test for "this string
// is an environment entry" where the string could also be something else
// (a kernel or range name, program output).
var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// isEnvEntry reports whether s is one KEY=VALUE entry with a POSIX name.
func isEnvEntry(s string) bool {
	k, _, ok := strings.Cut(s, "=")
	return ok && envKey.MatchString(k) && !strings.ContainsAny(s, "\n\r")
}

// keepEntry reports whether the environment entry e (KEY=VALUE, any key
// spelling) survives.
func keepEntry(e string) bool {
	k, v, ok := strings.Cut(e, "=")
	return ok && keepEnv(k, v)
}

// blockSep finds entry boundaries in a flattened environment block that
// has no NUL separators (TARGET_INFO_SYSTEM_ENV DeviceEnvironment in nsys
// 2024.x joins entries with ';').
var blockSep = regexp.MustCompile(`[;\n][A-Za-z_][A-Za-z0-9_]*=`)

// splitEnvBlock splits an environment block into its entries and returns
// the separator to join kept entries with. NUL-separated blocks (how nsys
// stores a process's environment in StringIds and older DeviceEnvironment
// rows) split on NUL only; otherwise ';' or newline before a NAME= starts
// a new entry (so a ';' inside a value, as in LESSOPEN=| lesspipe %s;
// stays in that value unless a NAME= follows it).
func splitEnvBlock(s string) (entries []string, sep string) {
	if strings.Contains(s, "\x00") {
		return strings.Split(s, "\x00"), "\x00"
	}
	idx := blockSep.FindAllStringIndex(s, -1)
	if len(idx) == 0 {
		return []string{s}, ";"
	}
	sep = s[idx[0][0] : idx[0][0]+1]
	start := 0
	for _, m := range idx {
		entries = append(entries, s[start:m[0]])
		start = m[0] + 1
	}
	return append(entries, s[start:]), sep
}

// filterEnvBlock keeps the entries of an environment block that keepEntry
// allows, masked by m, and reports how many entries it dropped. An empty
// entry (a trailing separator) is dropped without counting.
func (m *masker) filterEnvBlock(s string) (string, int) {
	entries, sep := splitEnvBlock(s)
	var kept []string
	dropped := 0
	for _, e := range entries {
		switch {
		case e == "":
		case keepEntry(e):
			kept = append(kept, m.mask(e, false))
		default:
			dropped++
		}
	}
	return strings.Join(kept, sep), dropped
}

// stringValue redacts one StringIds value that no name column references
// (nsys keeps each process's environment and argv there as NUL-separated
// lists). A NUL-separated list with at least one KEY=VALUE entry is an
// environment block: only kept variables stay, and a block left empty
// becomes EnvMask. Another NUL-separated list is argv: masked as
// ARGUMENT rows are. A lone KEY=VALUE string is a one-entry block. Any
// other string is masked as metadata text.
func (m *masker) stringValue(s string) (string, int) {
	if strings.Contains(s, "\x00") {
		parts := strings.Split(s, "\x00")
		env := false
		for _, p := range parts {
			if isEnvEntry(p) {
				env = true
				break
			}
		}
		if !env {
			return strings.Join(m.maskArgv(parts), "\x00"), 0
		}
		out, n := m.filterEnvBlock(s)
		if out == "" {
			out = EnvMask
		}
		return out, n
	}
	if isEnvEntry(s) {
		if keepEntry(s) {
			return m.mask(s, false), 0
		}
		return EnvMask, 1
	}
	return m.mask(s, false), 0
}

// maskArgv masks a process's argument list: values after a secret flag
// (--password X, --token X), the value of --api-key=X or NAME=X where the
// name is secret or an identity, anything that looks like a token, and
// home paths, user and host names in the rest.
func (m *masker) maskArgv(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		prev := ""
		if i > 0 {
			prev = args[i-1]
		}
		out[i] = m.maskArg(prev, a)
	}
	return out
}

func (m *masker) maskArg(prev, a string) string {
	if isSecretFlag(prev) && a != "" && !strings.HasPrefix(a, "-") {
		return SecretMask
	}
	if k, v, ok := strings.Cut(a, "="); ok && v != "" {
		name := strings.TrimLeft(k, "-")
		if secretKey(name) || identityKeys[name] {
			return k + "=" + SecretMask
		}
		if tokenLike(v) {
			return k + "=" + SecretMask
		}
	}
	if tokenLike(a) {
		return SecretMask
	}
	return m.mask(a, false)
}

// isSecretFlag reports whether a is a flag like --password or -api-token
// whose value follows as the next argument.
func isSecretFlag(a string) bool {
	return strings.HasPrefix(a, "-") && !strings.Contains(a, "=") && secretKey(strings.TrimLeft(a, "-"))
}

var (
	tokenPrefix = regexp.MustCompile(`^(?:Bearer\s+)?(?:gh[pousr]_|github_pat_|glpat-|xox[abprs]-|sk-|sk_live_|rk_live_|hf_|AKIA|ASIA|AIza|ya29\.|eyJ)[A-Za-z0-9_\-.=+/]{12,}$`)
	tokenRun    = regexp.MustCompile(`^[A-Za-z0-9_\-+=.]{24,}$`)
	hexRun      = regexp.MustCompile(`^[0-9a-fA-F]{32,}$`)
)

// tokenLike reports whether an argument looks like a credential: a known
// token prefix (GitHub, GitLab, Slack, OpenAI, Hugging Face, AWS, Google,
// JWT), 32+ hex digits, or 24+ token characters mixing upper case, lower
// case and digits.
func tokenLike(a string) bool {
	if tokenPrefix.MatchString(a) || hexRun.MatchString(a) {
		return true
	}
	if !tokenRun.MatchString(a) {
		return false
	}
	var up, low, dig bool
	for _, c := range a {
		switch {
		case c >= 'A' && c <= 'Z':
			up = true
		case c >= 'a' && c <= 'z':
			low = true
		case c >= '0' && c <= '9':
			dig = true
		}
	}
	return up && low && dig
}
