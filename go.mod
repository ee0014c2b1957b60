module github.com/umtrace/umtrace

go 1.26.0

require (
	github.com/apache/arrow-go/v18 v18.9.0
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/spf13/pflag v1.1.0
	gonum.org/v1/gonum v0.17.0
)

require (
	github.com/goccy/go-json v0.12.0 // indirect
	github.com/google/flatbuffers v25.12.19+incompatible // indirect
	github.com/klauspost/cpuid/v2 v2.4.2 // indirect
	github.com/zeebo/xxh3 v1.1.0 // indirect
	golang.org/x/exp v0.0.0-20260112195511-716be5621a96 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
