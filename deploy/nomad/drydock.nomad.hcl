# Drydock on Nomad: orchestrator replicas on Docker hosts, sharing jobs
# through Postgres and archives through S3. Each replica runs its sandboxes
# on the Docker engine of its own host (--runtime docker), so the
# replicas go to different hosts. Nothing here was run on a real Nomad
# cluster; see ../README.md.
#
# Before `nomad job run deploy/nomad/drydock.nomad.hcl`:
#   - the Docker driver must allow host bind mounts (plugin "docker" {
#     config { volumes { enabled = true } } } in the client configuration):
#     the orchestrator reaches the engine's socket, and the Docker runtime
#     bind-mounts each sandbox's toolboxd socket directory from /run/drydock,
#     which must therefore be the same path inside and outside;
#   - for gVisor or Kata isolation, make runsc or kata-runtime the
#     engine's default runtime ("default-runtime" in daemon.json) on the
#     hosts: the sandboxes use the engine's default;
#   - the sandbox images must be on every host (drydock image build, or
#     docker pull from your registry);
#   - the secrets go into a Nomad variable:
#       nomad var put nomad/jobs/drydock store_url='postgres://...' \
#         artifacts_url='s3://bucket/prefix?endpoint=...' \
#         aws_access_key_id=... aws_secret_access_key=... anthropic_api_key=... \
#         link_key="$(openssl rand -hex 32)"

variable "image" {
  type        = string
  description = "The orchestrator image (deploy/Dockerfile)."
  default     = "registry.example.com/drydock/drydock:dev"
}

variable "replicas" {
  type    = number
  default = 2
}

job "drydock" {
  type        = "service"
  datacenters = ["*"]

  group "orchestrator" {
    count = var.replicas

    # A replica creates sandboxes on its own host's engine.
    constraint {
      operator = "distinct_hosts"
      value    = "true"
    }

    network {
      port "http" {
        to = 8080
      }
    }

    service {
      name     = "drydock"
      port     = "http"
      provider = "nomad"

      check {
        name     = "alive"
        type     = "http"
        path     = "/healthz"
        interval = "10s"
        timeout  = "2s"
      }

      check {
        name     = "ready"
        type     = "http"
        path     = "/readyz"
        interval = "5s"
        timeout  = "2s"
      }
    }

    update {
      max_parallel     = 1
      min_healthy_time = "10s"
      healthy_deadline = "3m"
      auto_revert      = true
    }

    restart {
      attempts = 3
      interval = "5m"
      delay    = "10s"
      mode     = "delay"
    }

    task "server" {
      driver = "docker"
      # SIGTERM releases the leases of running jobs for another replica;
      # in-flight requests get --shutdown-grace (20s).
      kill_timeout = "30s"
      # Whoever can use the engine's socket is root on the host anyway; the
      # sandboxes themselves run as uid 1000 with every capability dropped.
      user = "root"

      config {
        image = var.image
        ports = ["http"]
        args = [
          "server",
          "--listen=0.0.0.0:8080",
          "--runtime=docker",
          "--data-dir=/local/data",
          "--log-format=json",
        ]
        volumes = [
          "/var/run/docker.sock:/var/run/docker.sock",
          "/run/drydock:/run/drydock",
        ]
      }

      env {
        # Stable per host, so a restarted replica recovers its own
        # sandboxes at once.
        DRYDOCK_NODE_ID = "${node.unique.name}"
      }

      template {
        destination = "secrets/drydock.env"
        env         = true
        data        = <<-EOT
          {{ with nomadVar "nomad/jobs/drydock" }}
          DRYDOCK_STORE={{ .store_url }}
          DRYDOCK_ARTIFACTS={{ .artifacts_url }}
          AWS_ACCESS_KEY_ID={{ .aws_access_key_id }}
          AWS_SECRET_ACCESS_KEY={{ .aws_secret_access_key }}
          ANTHROPIC_API_KEY={{ .anthropic_api_key }}
          {{ end }}
        EOT
      }

      # One key signs live-view links for every replica.
      template {
        destination = "local/data/link.key"
        perms       = "0600"
        data        = <<-EOT
          {{ with nomadVar "nomad/jobs/drydock" }}{{ .link_key }}{{ end }}
        EOT
      }

      resources {
        cpu    = 500
        memory = 512
      }
    }
  }
}
