# NATS server image, built offline by deploy/docker/build.sh: the build host's Debian
# nats-server binary (dynamically linked against glibc, so the base is Debian bookworm) on BASE.
# With a registry, the official `nats:2.10-alpine` image can replace it (same config file).
ARG BASE=troupe-base:latest
FROM ${BASE}
USER root
COPY nats-server /usr/local/bin/nats-server
COPY nats-healthcheck.sh /usr/local/bin/nats-healthcheck
RUN chmod 0755 /usr/local/bin/nats-server /usr/local/bin/nats-healthcheck \
 && mkdir -p /data /etc/nats && chown 1000:1000 /data
USER 1000:1000
EXPOSE 4222 8222 6222
VOLUME /data
# /healthz answers 200 once the server (and JetStream) is ready.
HEALTHCHECK --interval=3s --timeout=3s --start-period=10s --retries=5 CMD ["nats-healthcheck"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["nats-server"]
CMD ["-c", "/etc/nats/nats.conf"]
LABEL org.opencontainers.image.title="troupe-nats" troupe.role=nats
