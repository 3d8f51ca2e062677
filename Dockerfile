# syntax=docker/dockerfile:1
#
# The scraper image: one binary on distroless (glibc + libgcc, no shell), running as uid 65532.
#
#   docker build -t scraper:0.1.0 .
#   docker run --rm -p 12345:12345 scraper:0.1.0          # config/local.alloy, built in
#   docker run --rm -p 12345:12345 -v "$PWD/my.alloy:/etc/scraper/config.alloy:ro" scraper:0.1.0
#
# The BPF object of pyroscope.ebpf is compiled into the binary (include_bytes), so the runtime
# stage needs nothing but the binary, a config and a writable storage directory.

ARG RUST_IMAGE=rust:1.95-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

FROM ${RUST_IMAGE} AS build
# Cargo.toml's release profile keeps line tables (~100 MB of DWARF in the binary); the image
# leaves them out (cargo then strips debuginfo too). `--build-arg
# CARGO_PROFILE_RELEASE_DEBUG=line-tables-only` keeps them.
ARG CARGO_PROFILE_RELEASE_DEBUG=none
WORKDIR /src
# .dockerignore lets in only what the build reads: the manifest and lock file, build.rs,
# src/, proto/, bpf/ (the committed object), benches/ (declared in Cargo.toml) and the
# default config.
COPY . .
# The registry and target directories are BuildKit caches, so a rebuild after a source change
# only recompiles the crate; the binary is copied out of the cache in the same step.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release --locked --bin scraper \
    && install -D -m 0755 target/release/scraper /out/usr/bin/scraper \
    && install -d -m 0755 /out/var/lib/scraper

FROM ${RUNTIME_IMAGE}
LABEL org.opencontainers.image.title="scraper" \
      org.opencontainers.image.description="Continuous-profiling scraper: Alloy-compatible pull-mode pprof pipeline in one binary" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="gcr.io/distroless/cc-debian12:nonroot"
COPY --from=build /out/usr/bin/scraper /usr/bin/scraper
# The default config: scrapes the scraper's own CPU profile at 127.0.0.1:12345, which the
# server below also answers on since it listens on 0.0.0.0:12345.
COPY config/local.alloy /etc/scraper/config.alloy
# --storage.path: distroless has no shell to mkdir with, so the directory comes from the
# build stage, owned by the user that writes to it.
COPY --from=build --chown=65532:65532 /out/var/lib/scraper /var/lib/scraper
USER 65532:65532
EXPOSE 12345
ENTRYPOINT ["/usr/bin/scraper"]
CMD ["run", "/etc/scraper/config.alloy", "--server.http.listen-addr=0.0.0.0:12345", "--storage.path=/var/lib/scraper"]
