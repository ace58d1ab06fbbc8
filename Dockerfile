# syntax=docker/dockerfile:1
# Build stage: runs on the build machine's own platform and cross-compiles for
# the target one (Go needs no emulation for that), with the same command as
# `make build` (CGO_ENABLED=0, static binary). A multi-arch build:
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg REVISION=$(git rev-parse HEAD) -t ghcr.io/natsaudit/nats-version-auditor:$(cat VERSION) .
# The release is the VERSION file's: ARG VERSION's default below is held to it
# by a test, and the build stage refuses a --build-arg VERSION that is not it,
# so that the tag, the labels and --version say one release.
FROM --platform=$BUILDPLATFORM golang:1.26-bookworm AS build
WORKDIR /src
# The modules' files first, so that the downloads are a layer of their own;
# the Go client's go.mod with them, as go.mod replaces it with that directory.
COPY go.mod go.sum ./
COPY auditor/client/go.mod auditor/client/
RUN go mod download
COPY . .
ARG TARGETOS TARGETARCH
ARG VERSION=0.1.0
ARG REVISION=unknown
RUN test "${VERSION}" = "$(cat VERSION)" || { echo "--build-arg VERSION=${VERSION} is not the VERSION file's $(cat VERSION)" >&2; exit 1; }
RUN GOOS=${TARGETOS} GOARCH=${TARGETARCH} make build VERSION=${VERSION} REVISION=${REVISION}

# Runtime stage: no shell, no package manager, uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="nats-version-auditor" \
      org.opencontainers.image.description="Audits the versions of every NATS server, and the leaders and peers of every JetStream asset, against a version floor." \
      org.opencontainers.image.source="https://github.com/natsaudit/nats-version-auditor" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /src/bin/nats-version-auditor /nats-version-auditor
COPY LICENSE /licenses/nats-version-auditor/LICENSE
USER 65532:65532
EXPOSE 7779
ENTRYPOINT ["/nats-version-auditor"]
CMD ["serve"]
