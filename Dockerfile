# The Drydock sandbox image, for users who have a registry. `drydock image
# build` makes the same image with no registry (mmdebstrap + import); both
# read image/packages/*.txt and image/setup.sh, and a test keeps the
# configuration lines below equal to image.Changes.
#
# Node.js, npm and TypeScript come from an npm registry, pinned by integrity
# in image/packages/npm.txt; name the registry you use:
#
#   docker build --build-arg PROFILE=desktop --build-arg NPM_REGISTRY=$(npm config get registry) -t drydock-sandbox:desktop .
#   docker build --build-arg PROFILE=headless --build-arg NPM_REGISTRY=$(npm config get registry) -t drydock-sandbox:headless .

FROM golang:1.26-bookworm AS toolboxd
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/toolboxd ./cmd/toolboxd

FROM debian:bookworm-slim
ARG PROFILE=desktop
ARG NPM_REGISTRY
# The configuration below switches to the agent; installing needs root, even
# on a base image that set another user.
USER root
COPY image/packages/ /tmp/drydock/packages/
COPY image/setup.sh image/npm-fetch.sh /tmp/drydock/
RUN set -eu; \
	case "$PROFILE" in \
		headless) lists=/tmp/drydock/packages/headless.txt ;; \
		desktop) lists="/tmp/drydock/packages/headless.txt /tmp/drydock/packages/desktop.txt" ;; \
		*) echo "PROFILE must be headless or desktop" >&2; exit 1 ;; \
	esac; \
	apt-get update; \
	grep -hv '^#' $lists | xargs apt-get install -y --no-install-recommends; \
	sh /tmp/drydock/npm-fetch.sh /tmp/drydock/packages/npm.txt "$NPM_REGISTRY" /tmp/drydock/npm; \
	sh /tmp/drydock/setup.sh / /tmp/drydock/npm; \
	rm -rf /tmp/drydock
COPY --from=toolboxd /out/toolboxd /usr/local/bin/toolboxd
USER 1000:1000
WORKDIR /workspace
ENV PATH=/home/agent/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ENV HOME=/home/agent
ENV NPM_CONFIG_PREFIX=/home/agent/.local
ENV NPM_CONFIG_CACHE=/home/agent/.npm
ENV NPM_CONFIG_UPDATE_NOTIFIER=false
ENV LANG=C.UTF-8
ENV SHELL=/bin/bash
ENV DRYDOCK_PROFILE=${PROFILE}
LABEL drydock.profile=${PROFILE}
ENTRYPOINT ["/usr/local/bin/toolboxd"]
