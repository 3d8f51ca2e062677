#!/bin/sh
# Rebuilds bpf/profile.bpf.o from the C sources and records their hash in
# bpf/profile.bpf.sha256, which a unit test (src/components/pyroscope/ebpf/bpf.rs) compares with the sources so
# an edit without a rebuild fails CI. Needs only Debian's clang and llvm (llvm-strip);
# cargo builds use the committed object and need neither.
set -eu
cd "$(dirname "$0")"
CLANG=${CLANG:-clang}
STRIP=${LLVM_STRIP:-llvm-strip}
# -g: BTF (and so CO-RE relocations) is generated only with debug info; strip -g then removes
# the DWARF and keeps .BTF/.BTF.ext.
"$CLANG" -O2 -g -target bpf -D__TARGET_ARCH_x86 -I . -c profile.bpf.c -o profile.bpf.o
"$STRIP" -g profile.bpf.o
cat scraper_bpf.h profile.bpf.c | sha256sum | cut -d' ' -f1 > profile.bpf.sha256
echo "bpf/profile.bpf.o: $(wc -c < profile.bpf.o) bytes, sources $(cat profile.bpf.sha256)"
