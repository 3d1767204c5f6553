# The overseer binary: worker, judge service, dashboard and operator CLI.
#   docker build -t temporal-overseer .
#   docker run --rm temporal-overseer help

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/overseer ./cmd/overseer

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/overseer /usr/local/bin/overseer
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/overseer"]
CMD ["help"]
