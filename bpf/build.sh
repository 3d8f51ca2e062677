#!/bin/sh
# Rebuilds the BPF objects from their C sources and records the sources' hash beside each:
# bpf/profile.bpf.o (the CPU sampler) and bpf/offcpu.bpf.o (the off-CPU sampler), with
# bpf/<name>.bpf.sha256, which unit tests (src/components/pyroscope/ebpf/bpf.rs,
# src/components/pyroscope/ebpf/offcpu/bpf.rs) compare with the sources so an edit without a
# rebuild fails CI. Needs only Debian's clang and llvm (llvm-strip); cargo builds use the
# committed objects and need neither.
set -eu
cd "$(dirname "$0")"
CLANG=${CLANG:-clang}
STRIP=${LLVM_STRIP:-llvm-strip}
# build NAME HEADERS...: the hash covers the headers (in the order given) then NAME.bpf.c.
build() {
	name=$1
	shift
	# -g: BTF (and so CO-RE relocations) is generated only with debug info; strip -g then
	# removes the DWARF and keeps .BTF/.BTF.ext.
	"$CLANG" -O2 -g -target bpf -D__TARGET_ARCH_x86 -I . -c "$name.bpf.c" -o "$name.bpf.o"
	"$STRIP" -g "$name.bpf.o"
	cat "$@" "$name.bpf.c" | sha256sum | cut -d' ' -f1 > "$name.bpf.sha256"
	echo "bpf/$name.bpf.o: $(wc -c < "$name.bpf.o") bytes, sources $(cat "$name.bpf.sha256")"
}
# `build.sh offcpu` rebuilds one object only (clang's output is not byte-identical across
# versions, so an untouched object is better left as committed).
for name in ${@:-profile offcpu}; do
	case $name in
	profile) build profile scraper_bpf.h user_stack.h ;;
	offcpu) build offcpu scraper_bpf.h user_stack.h ;;
	*) echo "unknown object $name" >&2; exit 1 ;;
	esac
done
