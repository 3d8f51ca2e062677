#!/usr/bin/env bash
# Regenerates the generated part of the committed seed corpus fuzz/corpus/<target>:
#
#   decode, delta   small real profiles from tests/data/pprof (raw and gzipped) and synthetic
#                   ones written by a Rust test. Delta seeds are `u16 LE length of OLD | OLD | NEW`.
#   syntax          config-*.alloy: copies of our own config/**/*.alloy. The other syntax seeds
#                   (*.alloy without the prefix) are hand-written and committed as they are.
#   relabel         one rule list per action, invalid rules, odd regexes (layout: see
#                   fuzz_targets/relabel.rs).
#   receive         pyroscope.receive_http requests: label-set names, multipart bodies, folded
#                   text, /ingest query strings with each format (layout: see
#                   fuzz_targets/receive.rs).
#   querier         one request of every querier method (some gzipped, some invalid), written by
#                   a Rust test, and small real profiles from tests/data/pprof (raw and gzipped).
#   push_response   Connect error bodies and other backend answers (`STATUS CONTENT-TYPE\n`
#                   then the body), querier responses wrapping a real profile.
#
#   fuzz/make-seeds.sh                     # every target
#   fuzz/make-seeds.sh relabel syntax      # only these (decode, delta, querier need a cargo test)
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C # ${#s} counts bytes
data=tests/data/pprof
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(decode delta syntax relabel push_response receive querier)
wants() { [[ " ${targets[*]} " == *" $1 "* ]]; }

byte() { printf "\\x$(printf %02x "$1")"; }
str() { byte ${#1}; printf '%s' "$1"; } # u8 length, bytes (also a protobuf string's length)
varint() { # protobuf varint
  local v=$1
  while [ "$v" -ge 128 ]; do
    byte $(((v & 127) | 128))
    v=$((v >> 7))
  done
  byte "$v"
}

if wants decode; then
  rm -rf fuzz/corpus/decode && mkdir -p fuzz/corpus/decode
  gzip -dc "$data/goapp-mutex-1.pb.gz" > fuzz/corpus/decode/goapp-mutex
  gzip -dc "$data/goapp-block-1.pb.gz" > fuzz/corpus/decode/goapp-block
  gzip -dc "$data/goapp-allocs-1.pb.gz" > fuzz/corpus/decode/goapp-allocs
  gzip -dc "$data/prometheus-mutex-1.pb.gz" > fuzz/corpus/decode/prometheus-empty-mutex
  cp "$data/goapp-mutex-1.pb.gz" fuzz/corpus/decode/goapp-mutex.gz
  printf '\x32\x00' > fuzz/corpus/decode/minimal
fi

if wants delta; then
  rm -rf fuzz/corpus/delta && mkdir -p fuzz/corpus/delta
  pair() { # name old.gz new.gz
    local old new n
    old=$(mktemp) new=$(mktemp)
    gzip -dc "$2" > "$old"
    gzip -dc "$3" > "$new"
    n=$(stat -c %s "$old")
    { byte $((n & 255)); byte $((n >> 8)); cat "$old" "$new"; } > "fuzz/corpus/delta/$1"
    rm -f "$old" "$new"
  }
  pair goapp-mutex "$data/goapp-mutex-1.pb.gz" "$data/goapp-mutex-2.pb.gz"
  pair goapp-block "$data/goapp-block-1.pb.gz" "$data/goapp-block-2.pb.gz"
  pair prometheus-empty "$data/prometheus-block-1.pb.gz" "$data/prometheus-block-2.pb.gz"
fi

if wants decode || wants delta; then
  # Writes the synthetic decode and delta seeds.
  cargo test --lib pprof::delta::seeds::write_fuzz_seeds -- --ignored --exact >/dev/null
fi

if wants syntax; then
  mkdir -p fuzz/corpus/syntax
  rm -f fuzz/corpus/syntax/config-*
  find config -name '*.alloy' | sort | while read -r f; do
    cp "$f" "fuzz/corpus/syntax/config-$(echo "${f#config/}" | tr / -)"
  done
fi

if wants relabel; then
  rm -rf fuzz/corpus/relabel && mkdir -p fuzz/corpus/relabel
  u64() { # little endian
    local v=$1 i
    for i in 0 1 2 3 4 5 6 7; do byte $(((v >> (8 * i)) & 255)); done
  }
  # Action indices (Action::ALL) and field flags, as fuzz_targets/relabel.rs reads them.
  declare -A A=([replace]=0 [keep]=1 [drop]=2 [keepequal]=3 [dropequal]=4 [hashmod]=5
    [labelmap]=6 [labeldrop]=7 [labelkeep]=8 [lowercase]=9 [uppercase]=10)
  SRC=1 SEP=2 RE=4 MOD=8 TGT=16 REPL=32
  # rule ACTION [src=a,b] [sep=S] [re=R] [mod=N] [tgt=T] [repl=R]; fields in the target's order.
  rule() {
    local action=$1 flags=0 kv
    shift
    for kv in "$@"; do
      case $kv in
        src=*) flags=$((flags | SRC)) ;; sep=*) flags=$((flags | SEP)) ;;
        re=*) flags=$((flags | RE)) ;; mod=*) flags=$((flags | MOD)) ;;
        tgt=*) flags=$((flags | TGT)) ;; repl=*) flags=$((flags | REPL)) ;;
      esac
    done
    byte "${A[$action]}"
    byte "$flags"
    for kv in "$@"; do # source labels first, then the others in flag order
      if [[ $kv == src=* ]]; then
        local IFS=,
        # shellcheck disable=SC2206
        local names=(${kv#src=})
        unset IFS
        byte ${#names[@]}
        local n
        for n in "${names[@]}"; do str "$n"; done
      fi
    done
    for kv in "$@"; do [[ $kv == sep=* ]] && str "${kv#sep=}"; done
    for kv in "$@"; do [[ $kv == re=* ]] && str "${kv#re=}"; done
    for kv in "$@"; do [[ $kv == mod=* ]] && u64 "${kv#mod=}"; done
    for kv in "$@"; do [[ $kv == tgt=* ]] && str "${kv#tgt=}"; done
    for kv in "$@"; do [[ $kv == repl=* ]] && str "${kv#repl=}"; done
    return 0
  }
  labels() { # a typical Kubernetes pod target
    str __address__ && str 10.0.0.1:8080
    str __meta_kubernetes_namespace && str prod
    str __meta_kubernetes_pod_label_app && str web
    str __meta_kubernetes_pod_container_port_name && str http-metrics
    str job && str Web-App
    str env && str prod
  }
  seed() { # NAME RULES... (each rule one argument: "action field...")
    local name=$1 r
    shift
    {
      byte $#
      byte 6
      for r in "$@"; do
        # shellcheck disable=SC2086
        eval rule $r
      done
      labels
    } > "fuzz/corpus/relabel/$name"
  }
  seed replace "replace src=__meta_kubernetes_namespace,__meta_kubernetes_pod_label_app sep=/ 're=(.+)/(.+)' tgt=service_name 'repl=\${2}-\$1'"
  seed replace-defaults "replace src=job tgt=copy"
  seed replace-template-target "replace src=__meta_kubernetes_pod_label_app 're=(.*)' 'tgt=label_\$1' repl=x"
  seed replace-delete "replace src=env 're=prod' tgt=job repl="
  seed keep "keep src=__meta_kubernetes_pod_label_app 're=web|api'"
  seed drop "drop src=env re=dev"
  seed keepequal "keepequal src=__meta_kubernetes_namespace tgt=env"
  seed dropequal "dropequal src=env tgt=__meta_kubernetes_namespace"
  seed hashmod "hashmod src=__address__ mod=3 tgt=__tmp_hash" "keep src=__tmp_hash re=1"
  seed labelmap "labelmap 're=__meta_kubernetes_pod_label_(.+)' 'repl=app_\${1}'"
  seed labeldrop "labeldrop 're=__meta_.*'"
  seed labelkeep "labelkeep 're=__address__|job'"
  seed lowercase "lowercase src=job tgt=job_lower"
  seed uppercase "uppercase src=env tgt=ENV"
  seed all-actions \
    "labelmap 're=__meta_kubernetes_(pod_label_.+)' 'repl=\$1'" \
    "replace src=__address__ 're=([^:]+):(\\d+)' tgt=__tmp_port 'repl=\$2'" \
    "hashmod src=__address__,job sep=@ mod=18446744073709551615 tgt=__tmp_hash" \
    "lowercase src=job tgt=job" \
    "keepequal src=pod_label_app tgt=pod_label_app" \
    "labeldrop 're=__tmp.*'" \
    "uppercase src=env tgt=env"
  seed invalid-hashmod-zero "hashmod src=__address__ tgt=h"
  seed invalid-labeldrop-sources "labeldrop src=job re=job"
  seed invalid-lookahead "keep src=job 're=(?=x)'"
  seed invalid-missing-target "replace src=job"
  seed invalid-labelmap-replacement "labelmap 're=(.*)' 'repl=\${'"
  seed invalid-keepequal-regex "keepequal src=job tgt=env re=x"
  seed invalid-lowercase-replacement "lowercase src=job tgt=j repl=x"
  seed invalid-template-target "replace src=job 'tgt=\$\$bad-name'"
  seed invalid-second "keep src=job" "drop src=job re=a{1001}"
  seed regex-go-syntax "replace src=job,env 're=(?i)^\\p{Greek}*[[:alpha:]]\\w{1,3}\\Q.*\\E[]a-]\\101(?P<x>.)\$' tgt=out 'repl=\${x}\$1x\${2}'"
  seed regex-literal-split "replace src=__address__ 're=(.+):(\\d+)' tgt=host 'repl=\$1'"
  seed empty-target "keep src=missing re="
fi

if wants push_response; then
  rm -rf fuzz/corpus/push_response && mkdir -p fuzz/corpus/push_response
  resp() { # NAME "STATUS[ CONTENT-TYPE]" BODY
    printf '%s\n%s' "$2" "$3" > "fuzz/corpus/push_response/$1"
  }
  resp ok "200 application/proto" ""
  resp ok-wrong-type "200 text/html; charset=utf-8" "<html><body>login</body></html>"
  resp ok-json "200 application/json" "{}"
  resp rate-limited "429 application/json" \
    '{"code":"resource_exhausted","message":"push rate limit (20 MiB) exceeded while adding 3 MiB for tenant anonymous"}'
  resp invalid-argument "400 application/json; charset=utf-8" \
    '{"code":"invalid_argument","message":"profile is too old: 2024-01-01T00:00:00Z","details":[{"type":"google.rpc.ErrorInfo","value":"CgZyZWFzb24=","debug":{"reason":"too old"}}]}'
  resp unauthenticated "401 application/json" '{"code":"unauthenticated","message":"invalid token"}'
  resp permission-denied "403 application/json" '{"code":"permission_denied","message":"tenant not allowed"}'
  resp unavailable "503 application/json" '{"code":"unavailable","message":"ingester is shutting down"}'
  resp deadline "504 application/json" '{"code":"deadline_exceeded","message":"context deadline exceeded"}'
  resp unimplemented "404 application/json" '{"code":"unimplemented","message":"404 page not found"}'
  resp internal-escapes "500 application/json" \
    '{"code":"internal","message":"line\nbreak \"quoted\" \u00e9 \ud83d\ude00 \\ tab\t"}'
  resp no-code "500 application/json" '{"message":"no code given"}'
  resp null-code "500 application/json" '{"code":null,"message":null}'
  resp bogus-code "400 application/json" '{"code":"bogus","message":"unknown code name"}'
  resp not-json "502 application/json" "<html>502 Bad Gateway</html>"
  resp proxy-text "503 text/plain" "upstream connect error or disconnect/reset before headers"
  resp proxy-429 "429 text/plain; charset=utf-8" "Too Many Requests"
  resp no-content-type "502" ""
  resp too-large "413 text/html" "<html><head><title>413 Request Entity Too Large</title></head></html>"
  # Querier responses (src/query/remote.rs): SelectMergeStacktracesResponse { pprof (5) {
  # profile (1) } }, the raw and gzipped pprof of SelectMergeProfile, and a SeriesResponse.
  raw=$(mktemp)
  gzip -dc "$data/goapp-mutex-1.pb.gz" > "$raw"
  wrap() { # FILE: the response message around FILE as profile bytes
    local n m
    n=$(stat -c %s "$1")
    m=$((1 + n + $(varint "$n" | wc -c)))
    byte $(((5 << 3) | 2)) && varint "$m" && byte $(((1 << 3) | 2)) && varint "$n" && cat "$1"
  }
  { printf '200 application/proto\n'; wrap "$raw"; } > fuzz/corpus/push_response/querier-stacktraces
  { printf '200 application/proto\n'; wrap "$data/goapp-mutex-1.pb.gz"; } \
    > fuzz/corpus/push_response/querier-stacktraces-gzip
  { printf '200 application/proto\n'; cat "$raw"; } > fuzz/corpus/push_response/querier-merge-profile
  { printf '200 application/proto\n'; cat "$data/goapp-mutex-1.pb.gz"; } \
    > fuzz/corpus/push_response/querier-merge-profile-gzip
  # Flame graph only (field 1): an older server.
  { printf '200 application/proto\n'; byte 10; byte 2; byte 8; byte 1; } \
    > fuzz/corpus/push_response/querier-flamegraph
  series() { # labels_set (2): Labels { labels (1): LabelPair { name (1), value (2) } }
    local a=service_name b=web c=__profile_type__ d=mutex:contentions:count:contentions:count
    local p1=$((4 + ${#a} + ${#b})) p2=$((4 + ${#c} + ${#d}))
    byte 18 && byte $((4 + p1 + p2))
    byte 10 && byte $p1 && byte 10 && str "$a" && byte 18 && str "$b"
    byte 10 && byte $p2 && byte 10 && str "$c" && byte 18 && str "$d"
  }
  { printf '200 application/proto\n'; series; series; } > fuzz/corpus/push_response/querier-series
  rm -f "$raw"
fi

if wants receive; then
  rm -rf fuzz/corpus/receive && mkdir -p fuzz/corpus/receive
  seed() { printf '%b' "$2" > "fuzz/corpus/receive/$1"; }
  seed name-plain 'my.app.cpu'
  seed name-labels 'my.app.cpu{env=staging,region=eu-west-1,service_name=checkout}'
  seed name-bad 'my.app{env=,=x,a-b=c}'
  seed time-units '1700000000s'
  seed time-date '20261126'
  seed multipart-boundary "multipart/form-data; boundary=\"b\"
--b\r
Content-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"\r
Content-Type: application/octet-stream\r
\r
data\r
--b\r
Content-Disposition: form-data; name=\"sample_type_config\"\r
\r
{\"inuse_space\":{\"units\":\"bytes\",\"aggregation\":\"average\"}}\r
--b--\r
"
  seed folded-groups 'app.cpu
main;work;spin 40
main;idle 10
main;work 2
'
  seed folded-lines 'app.alloc_objects
main;work
main;work
main;idle
'
  seed ingest-folded 'name=app.cpu%7Benv%3Dprod%7D&from=1700000000&until=1700000010&sampleRate=100&spyName=gospy&format=folded
text/plain
main;work 3
main;idle 1
'
  seed ingest-lines 'name=app.cpu&format=lines&units=samples

main;work
main;idle
'
  seed ingest-trie 'name=app.cpu&format=trie
binary/octet-stream+trie
x'
  { printf 'name=app.cpu&spyName=gospy&format=pprof\n'; gzip -dc "$data/goapp-mutex-1.pb.gz"; } \
    > fuzz/corpus/receive/ingest-pprof
  { printf 'name=app&spyName=rbspy&format=pprof\n'; cat "$data/goapp-heap-1.pb.gz"; } \
    > fuzz/corpus/receive/ingest-pprof-gzip-scripting
  { printf 'name=app&format=pprof\nmultipart/form-data; boundary=b\n--b\r\nContent-Disposition: form-data; name="profile"; filename="profile.pprof"\r\n\r\n'
    cat "$data/goapp-heap-1.pb.gz"; printf '\r\n--b--\r\n'; } > fuzz/corpus/receive/ingest-multipart
fi

if wants querier; then
  rm -rf fuzz/corpus/querier && mkdir -p fuzz/corpus/querier
  gzip -dc "$data/goapp-mutex-1.pb.gz" > fuzz/corpus/querier/goapp-mutex
  gzip -dc "$data/goapp-allocs-1.pb.gz" > fuzz/corpus/querier/goapp-allocs
  gzip -dc "$data/prometheus-block-1.pb.gz" > fuzz/corpus/querier/prometheus-empty-block
  cp "$data/goapp-heap-1.pb.gz" fuzz/corpus/querier/goapp-heap.gz
  cp "$data/goapp-block-1.pb.gz" fuzz/corpus/querier/goapp-block.gz
  # The requests.
  cargo test --lib server::querier::seeds::write_fuzz_seeds -- --ignored --exact >/dev/null
fi

ls -l "${targets[@]/#/fuzz/corpus/}"
