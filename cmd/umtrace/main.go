package main
import (
 _ "github.com/apache/arrow-go/v18/arrow"
 _ "github.com/mattn/go-sqlite3"
 _ "gonum.org/v1/gonum/stat"
 _ "github.com/spf13/pflag"
)
func main(){}
