# Builds contiv-cni from the repository root: docker build -f deploy/docker/contiv-cni.Dockerfile .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/contiv-cni ./cmd/contiv-cni

FROM gcr.io/distroless/static-debian12:latest
COPY --from=build /out/contiv-cni /usr/local/bin/contiv-cni
ENTRYPOINT ["/usr/local/bin/contiv-cni"]
