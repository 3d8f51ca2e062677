// tlsclient is the oracle for Go's TLS verification (tests/tls_go.rs): it GETs a URL trusting
// only the PEM certificates in -ca (as Alloy's tls_config ca_file does), optionally verifying
// against -server-name, and prints "ok" or "error: <reason>".
package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"
)

func main() {
	ca := flag.String("ca", "", "PEM file of trusted certificates")
	serverName := flag.String("server-name", "", "name to verify instead of the URL's host")
	flag.Parse()
	pem, err := os.ReadFile(*ca)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		fmt.Println("error: no certificates in", *ca)
		os.Exit(2)
	}
	client := &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: *serverName},
		},
	}
	resp, err := client.Get(flag.Arg(0))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	resp.Body.Close()
	fmt.Println("ok")
}
