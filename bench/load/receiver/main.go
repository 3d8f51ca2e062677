// A counting Pyroscope push endpoint for bench/load/run.sh: answers every
// POST /push.v1.PusherService/Push with 200 (an empty Connect response) and counts requests
// and body bytes; GET /count prints "<requests> <bytes>".
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	var requests, bytes atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/push.v1.PusherService/Push", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		requests.Add(1)
		bytes.Add(n)
		w.Header().Set("Content-Type", "application/proto")
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("/count", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%d %d\n", requests.Load(), bytes.Load())
	})
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", l.Addr())
	if err := http.Serve(l, mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
