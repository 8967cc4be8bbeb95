# Builds contiv-ksr from the repository root: docker build -f deploy/docker/contiv-ksr.Dockerfile .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/contiv-ksr ./cmd/contiv-ksr

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/contiv-ksr /usr/local/bin/contiv-ksr
ENTRYPOINT ["/usr/local/bin/contiv-ksr"]
