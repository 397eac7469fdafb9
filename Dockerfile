# syntax=docker/dockerfile:1
# A static modwright image: built with the Go toolchain, run from distroless
# as a non-root user with a read-only root file system (deploy/ sets that).
#   docker build -t ghcr.io/modwright/modwright:dev .
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/modwright ./cmd/modwright

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/modwright /modwright
USER 65532:65532
EXPOSE 9443 8080 8081
ENTRYPOINT ["/modwright"]
CMD ["serve"]
