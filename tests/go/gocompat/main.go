// The oracle for src/gocompat (tests/gocompat_oracle.rs): Go's own strconv, unicode and
// net/url, fed the test's inputs.
//
//	gocompat print    one line per code point 0..0x10FFFF: "<IsPrint><assigned>" as two 0/1
//	                  digits, where assigned means Go's Unicode tables give it a category
//	                  (what Go calls printable can then be compared code point by code point;
//	                  code points assigned by a later Unicode version than this Go's are not)
//	gocompat quote    for each JSON string on stdin, one JSON line
//	                  {"quote": strconv.Quote, "ascii": strconv.QuoteToASCII,
//	                   "query": url.QueryEscape, "unquery": url.QueryUnescape or "error: ..."}
//	gocompat float    for each stdin line "BITS VERB PREC" (BITS the float64's bits in hex,
//	                  PREC -1 for shortest), one line: strconv.FormatFloat(v, VERB, PREC, 64)
//	gocompat time     for each stdin line "KIND ARG", one line:
//	                  "S NANOS": time.Duration(NANOS).String()
//	                  "P TEXT":  time.ParseDuration(TEXT) as nanoseconds, or "error: ..."
//	                  "T NANOS": time.Unix(0, NANOS).UTC().Format(time.RFC3339Nano)
//	                  "M NANOS": the same with Alloy's log layout "2006-01-02T15:04:05.000Z07:00"
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
)

func assigned(r rune) bool {
	for _, table := range unicode.Categories {
		if unicode.Is(table, r) {
			return true
		}
	}
	return false
}

func main() {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gocompat print|quote|float|time")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "print":
		for r := rune(0); r <= unicode.MaxRune; r++ {
			p, a := '0', '0'
			if unicode.IsPrint(r) {
				p = '1'
			}
			if assigned(r) {
				a = '1'
			}
			fmt.Fprintf(out, "%c%c\n", p, a)
		}
	case "quote":
		in := bufio.NewScanner(os.Stdin)
		in.Buffer(make([]byte, 1<<20), 1<<24)
		enc := json.NewEncoder(out)
		for in.Scan() {
			var s string
			if err := json.Unmarshal(in.Bytes(), &s); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			unquery, err := url.QueryUnescape(s)
			if err != nil {
				unquery = "error: " + err.Error()
			}
			enc.Encode(map[string]string{
				"quote":   strconv.Quote(s),
				"ascii":   strconv.QuoteToASCII(s),
				"query":   url.QueryEscape(s),
				"unquery": unquery,
			})
		}
		if err := in.Err(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "float":
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			var bits uint64
			var verb string
			var prec int
			if _, err := fmt.Sscanf(in.Text(), "%x %s %d", &bits, &verb, &prec); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Fprintln(out, strconv.FormatFloat(math.Float64frombits(bits), verb[0], prec, 64))
		}
	case "time":
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			kind, arg, _ := strings.Cut(in.Text(), " ")
			switch kind {
			case "P":
				d, err := time.ParseDuration(arg)
				if err != nil {
					fmt.Fprintln(out, "error: "+err.Error())
				} else {
					fmt.Fprintln(out, int64(d))
				}
			default:
				n, err := strconv.ParseInt(arg, 10, 64)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				switch kind {
				case "S":
					fmt.Fprintln(out, time.Duration(n).String())
				case "T":
					fmt.Fprintln(out, time.Unix(0, n).UTC().Format(time.RFC3339Nano))
				case "M":
					fmt.Fprintln(out, time.Unix(0, n).UTC().Format("2006-01-02T15:04:05.000Z07:00"))
				}
			}
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: gocompat print|quote|float|time")
		os.Exit(2)
	}
}
