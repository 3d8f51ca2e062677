#!/usr/bin/env bash
# Regenerates the committed seed corpus fuzz/corpus/{decode,delta}: small real profiles from
# tests/data/pprof (raw and gzipped) and synthetic ones written by a Rust test.
# Delta seeds are `u16 LE length of OLD | OLD | NEW`.
set -euo pipefail
cd "$(dirname "$0")/.."
data=tests/data/pprof
rm -rf fuzz/corpus && mkdir -p fuzz/corpus/decode fuzz/corpus/delta

gzip -dc "$data/goapp-mutex-1.pb.gz" > fuzz/corpus/decode/goapp-mutex
gzip -dc "$data/goapp-block-1.pb.gz" > fuzz/corpus/decode/goapp-block
gzip -dc "$data/goapp-allocs-1.pb.gz" > fuzz/corpus/decode/goapp-allocs
gzip -dc "$data/prometheus-mutex-1.pb.gz" > fuzz/corpus/decode/prometheus-empty-mutex
cp "$data/goapp-mutex-1.pb.gz" fuzz/corpus/decode/goapp-mutex.gz
printf '\x32\x00' > fuzz/corpus/decode/minimal

pair() { # name old.gz new.gz
  local old new n
  old=$(mktemp) new=$(mktemp)
  gzip -dc "$2" > "$old"
  gzip -dc "$3" > "$new"
  n=$(stat -c %s "$old")
  { printf "\\x$(printf %02x $((n & 255)))\\x$(printf %02x $((n >> 8)))"; cat "$old" "$new"; } \
    > "fuzz/corpus/delta/$1"
  rm -f "$old" "$new"
}
pair goapp-mutex "$data/goapp-mutex-1.pb.gz" "$data/goapp-mutex-2.pb.gz"
pair goapp-block "$data/goapp-block-1.pb.gz" "$data/goapp-block-2.pb.gz"
pair prometheus-empty "$data/prometheus-block-1.pb.gz" "$data/prometheus-block-2.pb.gz"

cargo test --lib pprof::delta::seeds::write_fuzz_seeds -- --ignored --exact >/dev/null
ls -l fuzz/corpus/*
