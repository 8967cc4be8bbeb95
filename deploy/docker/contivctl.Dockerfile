# Builds contivctl from the repository root: docker build -f deploy/docker/contivctl.Dockerfile .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/contivctl ./cmd/contivctl

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/contivctl /usr/local/bin/contivctl
ENTRYPOINT ["/usr/local/bin/contivctl"]
