# The agent runs as root: it opens VPP's API socket and writes its node-ID state file.
# Builds contiv-agent from the repository root: docker build -f deploy/docker/contiv-agent.Dockerfile .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/contiv-agent ./cmd/contiv-agent

FROM gcr.io/distroless/static-debian12
COPY --from=build /out/contiv-agent /usr/local/bin/contiv-agent
ENTRYPOINT ["/usr/local/bin/contiv-agent"]
