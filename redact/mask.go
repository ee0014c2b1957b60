package redact

import (
	"regexp"
	"sort"
	"strings"
)

// Masks written in place of identities.
const (
	HostMask = "REDACTED-HOST"
	UserMask = "REDACTED-USER"
	HomeMask = "~"
)

// Home directories by convention: the user's name is the component after
// the prefix. pathChars is what a path component may hold.
const pathComp = `[^/\\\s"';:,|=\x00]+`

var (
	homeRE        = regexp.MustCompile(`(?:/home|/Users)/(` + pathComp + `)`)
	clusterHomeRE = regexp.MustCompile(`/global/(?:u\d+|homes)/[^/\\\s"';:,|=\x00]/(` + pathComp + `)|/p?scratch\d*/sd/[^/\\\s"';:,|=\x00]/(` + pathComp + `)|/scratch\d*/(` + pathComp + `)`)
	mailRE        = regexp.MustCompile(`/var/(?:spool/)?mail/(` + pathComp + `)`)
	rootRE        = regexp.MustCompile(`(^|[^\w.\-/])/root(/|$|[\s"';:,|=\x00])`)
	winHomeRE     = regexp.MustCompile(`(?i)(?:[A-Z]:)?\\{1,2}Users\\{1,2}([^\\\s"';\x00]+)`)
	ipv4RE        = regexp.MustCompile(`\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b`)
	sessionHostRE = regexp.MustCompile(`local/([^:@,/\s]+)`)
)

// ignoredNames are host and user names too generic to be worth masking
// inside other text (the identity fields themselves are still masked):
// placeholders and the system accounts whose environments a system-wide
// capture records (masking "colord" would rename the colord process).
var ignoredNames = map[string]bool{
	"unknown": true, "localhost": true, "root": true, "user": true, "ubuntu": true, "admin": true,
	"redacted-host": true, "redacted-user": true, "none": true, "null": true, "nobody": true,
	"daemon": true, "gdm": true, "gdm3": true, "colord": true, "messagebus": true, "syslog": true,
	"avahi": true, "kernoops": true, "rtkit": true, "whoopsie": true, "pulse": true, "lightdm": true,
	"sddm": true, "polkitd": true, "netdata": true, "geoclue": true, "saned": true, "usbmux": true,
	"dnsmasq": true, "uuidd": true, "tss": true, "sshd": true, "www-data": true, "backup": true,
	"games": true, "proxy": true, "mail": true, "news": true, "list": true, "sync": true,
}

// commonDirs are directory names that are never a user's home, even when
// a user has that name: a path component equal to a user name is masked
// as a home directory unless it is one of these.
var commonDirs = map[string]bool{
	"dev": true, "tmp": true, "usr": true, "bin": true, "lib": true, "lib64": true, "opt": true,
	"var": true, "etc": true, "home": true, "data": true, "work": true, "scratch": true, "src": true,
	"build": true, "local": true, "share": true, "test": true, "cuda": true, "proc": true, "sys": true,
	"run": true, "mnt": true, "media": true, "srv": true, "boot": true, "snap": true,
}

func generic(s string) bool {
	l := strings.ToLower(s)
	return len(s) < 3 || ignoredNames[l] || strings.HasPrefix(l, "systemd-") || strings.HasPrefix(l, "nvidia-")
}

// identities are the users, home directories and hosts (names and
// addresses) found in one export.
type identities struct {
	users, homes, hosts []string
}

// addEnv records what an environment entry says about who ran the capture
// and where.
func (id *identities) addEnv(k, v string) {
	v = strings.TrimSpace(unquote(strings.TrimSpace(v)))
	if v == "" {
		return
	}
	switch k {
	case "USER", "LOGNAME", "USERNAME", "SLURM_JOB_USER", "SUDO_USER", "PBS_O_LOGNAME", "LSB_USER":
		id.users = append(id.users, v)
	case "HOME", "USERPROFILE", "SNAP_REAL_HOME", "SCRATCH", "PSCRATCH", "HOMEPATH":
		id.homes = append(id.homes, v)
	case "HOSTNAME", "HOST", "COMPUTERNAME", "USERDOMAIN", "USERDOMAIN_ROAMINGPROFILE", "SLURMD_NODENAME",
		"SLURM_SUBMIT_HOST", "SLURM_LAUNCH_NODE_IPADDR", "SLURM_SRUN_COMM_HOST", "XAUTHLOCALHOSTNAME",
		"NETDATA_HOSTNAME", "NETDATA_REGISTRY_HOSTNAME", "SLURM_NODELIST", "SLURM_JOB_NODELIST",
		"SLURM_STEP_NODELIST", "HOSTALIASES", "NODE_NAME", "MASTER_ADDR":
		id.hosts = append(id.hosts, strings.TrimLeft(v, `\`))
	case "LOGONSERVER":
		id.hosts = append(id.hosts, strings.TrimLeft(v, `\`))
	case "SSH_CONNECTION", "SSH_CLIENT":
		id.hosts = append(id.hosts, ipv4RE.FindAllString(v, -1)...)
	case "SESSION_MANAGER":
		for _, m := range sessionHostRE.FindAllStringSubmatch(v, -1) {
			id.hosts = append(id.hosts, m[1])
		}
	}
	id.addPaths(v)
}

// addPaths records the users named by home paths in s.
func (id *identities) addPaths(s string) {
	if !strings.ContainsAny(s, `/\`) {
		return
	}
	for _, p := range pathRules {
		if !p.maybe(s) {
			continue
		}
		for _, m := range p.re.FindAllStringSubmatch(s, -1) {
			for _, g := range m[1:] {
				if g != "" {
					id.users = append(id.users, g)
				}
			}
		}
	}
}

// pathRules are the home-path patterns that name a user, each with a
// cheap test for whether it can match.
var pathRules = []struct {
	re    *regexp.Regexp
	maybe func(string) bool
}{
	{homeRE, func(s string) bool { return strings.Contains(s, "/home/") || strings.Contains(s, "/Users/") }},
	{clusterHomeRE, func(s string) bool { return strings.Contains(s, "/global/") || strings.Contains(s, "scratch") }},
	{mailRE, func(s string) bool { return strings.Contains(s, "/mail/") }},
	{winHomeRE, func(s string) bool { return strings.Contains(s, `\`) }},
}

type masker struct {
	users, homes []string
	hosts        []word
	longHosts    []word // hosts of 4+ characters and addresses, also masked in names
	userWords    []word
	hostNames    []string // for SQL prefilters
}

// word is a name to mask where it stands as a word.
type word struct {
	lit string
	re  *regexp.Regexp
}

func wordRE(s string) word {
	return word{s, regexp.MustCompile(`(^|[^A-Za-z0-9\-])` + regexp.QuoteMeta(s) + `($|[^A-Za-z0-9\-])`)}
}

func newMasker(id identities) *masker {
	m := &masker{}
	hosts := dedupe(id.hosts)
	// Short host names ("vm", a cluster's "nid001") also appear as prefixes
	// of FQDNs: keep both forms.
	for _, h := range hosts {
		if i := strings.IndexByte(h, '.'); i > 0 && !ipv4RE.MatchString(h) {
			hosts = append(hosts, h[:i])
		}
	}
	for _, h := range dedupe(hosts) {
		re := wordRE(h)
		m.hosts = append(m.hosts, re)
		if len(h) >= 4 {
			m.longHosts = append(m.longHosts, re)
			m.hostNames = append(m.hostNames, h)
		}
	}
	for _, u := range dedupe(id.users) {
		m.users = append(m.users, u)
		m.userWords = append(m.userWords, wordRE(u))
	}
	for _, h := range dedupeAll(id.homes) {
		if homeDir(h) {
			m.homes = append(m.homes, h)
		}
	}
	return m
}

// homeDir reports whether a HOME-like value is specific enough to mask
// wherever it occurs: an absolute path of two or more components (not "/",
// "/root" is masked by rootRE), or a Windows path under \Users.
func homeDir(h string) bool {
	h = strings.TrimRight(h, `/\`)
	if strings.HasPrefix(h, "/") {
		return strings.Count(h, "/") >= 2
	}
	return winHomeRE.MatchString(h)
}

func dedupe(v []string) []string {
	var keep []string
	for _, s := range v {
		if !generic(s) {
			keep = append(keep, s)
		}
	}
	return dedupeAll(keep)
}

// dedupeAll sorts longest first (so "node1.example.org" is replaced
// before "node1") and drops repeats.
func dedupeAll(v []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range v {
		s = strings.TrimSpace(s)
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

// mask rewrites home paths, and host and user names, in s. strict (for
// names that analysis reads: kernel, range, API and thread names, and the
// event tables' text) masks paths, long host names and addresses only.
func (m *masker) mask(s string, strict bool) string {
	s = m.maskPaths(s)
	hosts := m.hosts
	if strict {
		hosts = m.longHosts
	}
	for _, w := range hosts {
		s = replaceWord(w, s, HostMask)
	}
	if !strict {
		for _, w := range m.userWords {
			s = replaceWord(w, s, UserMask)
		}
	}
	return s
}

// maskPaths replaces home directories with ~: the export's own HOME-like
// values, /home/X, /Users/X, C:\Users\X, /root, cluster homes and
// scratch (/global/u1/c/X, /global/homes/c/X, /pscratch/sd/c/X,
// /scratch/X), and any path through a directory named like a user.
func (m *masker) maskPaths(s string) string {
	if !strings.ContainsAny(s, `/\`) {
		return s
	}
	for _, h := range m.homes {
		s = replacePrefix(s, h)
	}
	if strings.Contains(s, "/home/") || strings.Contains(s, "/Users/") {
		s = homeRE.ReplaceAllString(s, HomeMask)
	}
	if strings.Contains(s, "/global/") || strings.Contains(s, "scratch") {
		s = clusterHomeRE.ReplaceAllString(s, HomeMask)
	}
	if strings.Contains(s, `\`) {
		s = winHomeRE.ReplaceAllString(s, HomeMask)
	}
	if strings.Contains(s, "/root") {
		s = rootRE.ReplaceAllString(s, "${1}"+HomeMask+"${2}")
	}
	for _, u := range m.users {
		if !commonDirs[strings.ToLower(u)] {
			s = replaceUserDir(s, u)
		}
	}
	return s
}

// pathDelim ends a path when scanning back from a component.
func pathDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', ';', ',', '|', '=', ':', '(', ')', '[', ']', '{', '}', '<', '>', 0:
		return true
	}
	return false
}

// replacePrefix replaces each occurrence of the directory h (followed by
// a separator, a delimiter or the end) with ~.
func replacePrefix(s, h string) string {
	h = strings.TrimRight(h, `/\`)
	if h == "" {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, h)
		if i < 0 {
			break
		}
		end := i + len(h)
		if end == len(s) || s[end] == '/' || s[end] == '\\' || pathDelim(s[end]) {
			b.WriteString(s[:i])
			b.WriteString(HomeMask)
		} else {
			b.WriteString(s[:end])
		}
		s = s[end:]
	}
	if b.Len() == 0 {
		return s
	}
	b.WriteString(s)
	return b.String()
}

// replaceUserDir replaces a path up to and including a component equal to
// u (/pscratch/sd/k/u/x becomes ~/x) with ~.
func replaceUserDir(s, u string) string {
	var b strings.Builder
	changed := false
	for {
		i := indexComponent(s, u)
		if i < 0 {
			break
		}
		start := i // the separator before u
		for start > 0 && !pathDelim(s[start-1]) {
			start--
		}
		// A drive letter: C:\x\u.
		if start >= 2 && s[start-1] == ':' && isLetter(s[start-2]) && (start == 2 || pathDelim(s[start-3])) {
			start -= 2
		}
		b.WriteString(s[:start])
		b.WriteString(HomeMask)
		s = s[i+1+len(u):]
		changed = true
	}
	if !changed {
		return s
	}
	b.WriteString(s)
	return b.String()
}

// indexComponent returns the index of the separator before the first path
// component equal to u in s, or -1.
func indexComponent(s, u string) int {
	off := 0
	for {
		j := strings.Index(s[off:], u)
		if j < 0 {
			return -1
		}
		i := off + j
		end := i + len(u)
		if i > 0 && (s[i-1] == '/' || s[i-1] == '\\') && (end == len(s) || s[end] == '/' || s[end] == '\\' || pathDelim(s[end])) {
			return i - 1
		}
		off = i + 1
	}
}

func isLetter(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }

// replaceWord replaces every match of re (built by wordRE) with mask,
// keeping the delimiter characters around it. Adjacent matches that share
// a delimiter are caught by repeating until nothing changes.
func replaceWord(w word, s, mask string) string {
	if !strings.Contains(s, w.lit) {
		return s
	}
	for i := 0; i < 8; i++ {
		ns := w.re.ReplaceAllString(s, "${1}"+mask+"${2}")
		if ns == s {
			return s
		}
		s = ns
	}
	return s
}
