# The overseer binary: worker, judge service, dashboard and operator CLI.
#   docker build -t temporal-overseer .
#   docker run --rm temporal-overseer help

FROM golang:1.26 AS build
WORKDIR /src
# The repository's modules build together through go.work; their go.mod
# and go.sum files come first so that the download layer is cached.
COPY go.work go.work.sum go.mod go.sum ./
COPY overseer/jev/jevopenai/go.mod overseer/jev/jevopenai/go.sum overseer/jev/jevopenai/
COPY worker/go.mod worker/go.sum worker/
COPY eval/go.mod eval/go.sum eval/
COPY ops/go.mod ops/go.sum ops/
COPY otel/go.mod otel/go.sum otel/
COPY learn/go.mod learn/go.sum learn/
COPY dashboard/go.mod dashboard/go.sum dashboard/
COPY notify/go.mod notify/go.sum notify/
COPY cmd/go.mod cmd/go.sum cmd/
COPY testsuite/e2e/go.mod testsuite/e2e/go.sum testsuite/e2e/
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/overseer ./cmd/overseer

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/overseer /usr/local/bin/overseer
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/overseer"]
CMD ["help"]
