package ingest

import (
	"strconv"
	"strings"
)

// NameFlag is a property of a name that consumers test on every row:
// sources that give names as ids (NameTable) compute it once per string.
type NameFlag uint8

// NCCLKernel: the name is an NCCL collective kernel's (IsNCCLKernel).
const NCCLKernel NameFlag = 1

// NameFlags returns s's flags.
func NameFlags(s string) NameFlag {
	var f NameFlag
	if IsNCCLKernel(s) {
		f |= NCCLKernel
	}
	return f
}

// IsNCCLKernel reports whether a kernel is an NCCL collective
// (ncclKernel_*, ncclDevKernel_*; demangled names may carry a namespace or
// a return type).
func IsNCCLKernel(name string) bool {
	// One scan for "Kernel", whose capital K is rarer in kernel names
	// than the n of "nccl" (0.27 of name-diverse's 7.5 CPU-s with "nccl"):
	// this runs on every distinct kernel name (millions of 200-byte
	// templates in some traces).
	for i := 0; ; {
		j := strings.Index(name[i:], "Kernel")
		if j < 0 {
			return false
		}
		head := name[:i+j]
		if strings.HasSuffix(head, "nccl") || strings.HasSuffix(head, "ncclDev") {
			return true
		}
		i += j + 6
	}
}

// KernelBaseName returns a kernel's base name: no return type, namespaces, template
// arguments, parameters or qualifiers. "void ns::foo<int, 2>(float*) const"
// and "foo(float *, int)" give "foo"; Itanium-mangled names ("_Z3fooPf",
// "_ZN2ns3fooIiEEvPf") give the last component of their name; operators keep
// their symbol ("operator()"). Lambdas and names it cannot take apart are
// returned trimmed.
func KernelBaseName(name string) string {
	s := strings.TrimSpace(name)
	if s == "" {
		return ""
	}
	if strings.HasPrefix(s, "_Z") {
		if b := mangledBase(s); b != "" {
			return b
		}
		return s
	}
	// Drop trailing qualifiers after the parameter list.
	for {
		t := strings.TrimSpace(s)
		t = strings.TrimSuffix(t, "&&")
		t = strings.TrimSuffix(t, "&")
		for _, q := range []string{" const", " volatile", " noexcept"} {
			t = strings.TrimSuffix(t, q)
		}
		if t == s {
			break
		}
		s = t
	}
	// Parameters: the balanced (...) group at the end, unless it belongs
	// to "operator()" itself.
	if strings.HasSuffix(s, ")") {
		if i := openIndex(s, len(s)-1, '(', ')'); i > 0 {
			s = strings.TrimSpace(s[:i])
		}
	}
	// Template arguments at the end.
	if strings.HasSuffix(s, ">") && !strings.HasSuffix(s, "operator>") && !strings.HasSuffix(s, "operator>>") {
		if i := openIndex(s, len(s)-1, '<', '>'); i > 0 {
			s = strings.TrimSpace(s[:i])
		}
	}
	// Last component of the qualified name, then drop a return type.
	if i := lastTopLevel(s, "::"); i >= 0 {
		s = s[i+2:]
	} else if i := lastTopLevel(s, " "); i >= 0 {
		s = s[i+1:]
	}
	if strings.HasPrefix(s, "operator") {
		return strings.ReplaceAll(s, " ", "")
	}
	if i := strings.LastIndexByte(s, ' '); i >= 0 && !strings.ContainsAny(s, "[<(") {
		s = s[i+1:]
	}
	if s == "" || s == "operator" {
		return strings.TrimSpace(name)
	}
	return s
}

// openIndex returns the index of the bracket matching the close bracket at
// s[end], or -1.
func openIndex(s string, end int, open, close byte) int {
	depth := 0
	for i := end; i >= 0; i-- {
		switch s[i] {
		case close:
			depth++
		case open:
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// lastTopLevel returns the last index of sep outside (), <> and [] groups,
// or -1.
func lastTopLevel(s, sep string) int {
	depth := 0
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i] {
		case ')', '>', ']':
			if !(s[i] == '>' && i > 0 && s[i-1] == '-') {
				depth++
			}
		case '(', '<', '[':
			depth--
		}
		if depth == 0 && strings.HasPrefix(s[i:], sep) {
			return i
		}
	}
	return -1
}

// mangledBase returns the last source-name of an Itanium-mangled function
// name, or "".
func mangledBase(s string) string {
	s = strings.TrimPrefix(s, "_Z")
	nested := strings.HasPrefix(s, "N")
	if nested {
		s = s[1:]
		s = strings.TrimLeft(s, "rVKRO") // cv- and ref-qualifiers
	} else if strings.HasPrefix(s, "L") {
		s = s[1:] // internal linkage
	}
	last := ""
	for s != "" {
		c := s[0]
		switch {
		case c >= '0' && c <= '9':
			j := 0
			for j < len(s) && j < 9 && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			n, err := strconv.Atoi(s[:j])
			if err != nil || n <= 0 || j+n > len(s) {
				return last
			}
			last, s = s[j:j+n], s[j+n:]
			if !nested {
				return last
			}
		case c == 'S' && len(s) > 1 && s[1] == 't': // std::
			s = s[2:]
		case c == 'I': // template args: the name before them is the base
			return last
		default:
			return last
		}
	}
	return last
}
