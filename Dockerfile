# syntax=docker/dockerfile:1
# Build stage: the same command as `make build` (CGO_ENABLED=0, static binary).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=unknown
RUN make build VERSION=${VERSION} REVISION=${REVISION}

# Runtime stage: no shell, no package manager, uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /src/bin/nats-version-auditor /nats-version-auditor
USER 65532:65532
EXPOSE 7779
ENTRYPOINT ["/nats-version-auditor"]
CMD ["serve"]
