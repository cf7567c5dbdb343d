{{/* vim: set filetype=mustache: */}}

{{- define "bp.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Release-scoped name prefix. Component names are appended ("-enrichment-worker" is 18 characters),
so the prefix is capped at 40 to keep every object and label value within 63.
*/}}
{{- define "bp.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "bp.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels shared by every object of the release. */}}
{{- define "bp.labels" -}}
helm.sh/chart: {{ include "bp.chart" . }}
app.kubernetes.io/name: {{ include "bp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: bookmarks-platform
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "bp.selectorLabels" -}}
app.kubernetes.io/name: {{ include "bp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Per-component labels; call with (dict "root" $ "component" "gateway"). */}}
{{- define "bp.componentLabels" -}}
{{ include "bp.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "bp.componentSelectorLabels" -}}
{{ include "bp.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "bp.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "bp.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
The processes of the platform. The contract fixes module, port and host/port variables; values
only tune how each runs (values key = "key"). Each process serves clients on `port` and Prometheus
metrics on `metricsPort` (never on the client-facing port). The enrichment API and worker share one image.
*/}}
{{- define "bp.componentDefs" -}}
gateway:
  key: gateway
  image: gateway
  module: gateway
  port: 8080
  metricsPort: 9080
  hostEnv: GATEWAY_HOST
  portEnv: GATEWAY_PORT
  metricsPortEnv: GATEWAY_METRICS_PORT
  otelName: gateway
auth:
  key: auth
  image: auth
  module: auth
  port: 8081
  metricsPort: 9081
  hostEnv: AUTH_HOST
  portEnv: AUTH_PORT
  metricsPortEnv: AUTH_METRICS_PORT
  otelName: auth
bookmarks:
  key: bookmarks
  image: bookmarks
  module: bookmarks
  port: 8082
  metricsPort: 9082
  hostEnv: BOOKMARKS_HOST
  portEnv: BOOKMARKS_PORT
  metricsPortEnv: BOOKMARKS_METRICS_PORT
  otelName: bookmarks
enrichment-api:
  key: enrichmentApi
  image: enrichment
  module: enrichment
  port: 8083
  metricsPort: 9083
  hostEnv: ENRICHMENT_HOST
  portEnv: ENRICHMENT_PORT
  metricsPortEnv: ENRICHMENT_METRICS_PORT
  otelName: enrichment
enrichment-worker:
  key: enrichmentWorker
  image: enrichment
  module: enrichment.worker
  port: 8084
  metricsPort: 9084
  hostEnv: ENRICHMENT_WORKER_HOST
  portEnv: ENRICHMENT_WORKER_PORT
  metricsPortEnv: ENRICHMENT_WORKER_METRICS_PORT
  otelName: enrichment-worker
{{- end -}}

{{/* Services that own a database and ship Alembic migrations (module <svc>.migrate). */}}
{{- define "bp.migrationDefs" -}}
auth:
  image: auth
  module: auth.migrate
  databaseKey: authKey
  databaseEnv: DATABASE_URL_AUTH
bookmarks:
  image: bookmarks
  module: bookmarks.migrate
  databaseKey: bookmarksKey
  databaseEnv: DATABASE_URL_BOOKMARKS
enrichment:
  image: enrichment
  module: enrichment.migrate
  databaseKey: enrichmentKey
  databaseEnv: DATABASE_URL_ENRICHMENT
{{- end -}}

{{/* Full image reference; call with (dict "root" $ "image" "gateway"). */}}
{{- define "bp.image" -}}
{{- $img := index .root.Values.images .image -}}
{{- $repo := $img.repository -}}
{{- with .root.Values.image.registry -}}
{{- $repo = printf "%s/%s" (trimSuffix "/" .) $repo -}}
{{- end -}}
{{- $tag := default (default .root.Chart.AppVersion .root.Values.image.tag) $img.tag -}}
{{- if $img.digest -}}
{{- printf "%s:%s@%s" $repo $tag $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}
{{- end -}}

{{- define "bp.componentUrl" -}}
{{- printf "http://%s-%s:%v" (include "bp.fullname" .root) .component .port -}}
{{- end -}}

{{/*
Non-secret environment shared by every process, as a flat map of strings. Rendered into the
ConfigMap for Deployments, and inline into hook Jobs (which run before the ConfigMap exists).
Optional settings are omitted when empty: the services treat "unset" as "feature off".
*/}}
{{- define "bp.configData" -}}
{{- $c := .Values.config -}}
{{- $d := dict -}}
{{- $_ := set $d "LOG_LEVEL" $c.logLevel -}}
{{- /* Services refuse to start in production without real secrets (cursor key, signing keys). */ -}}
{{- $_ := set $d "APP_ENV" "production" -}}
{{- $_ := set $d "KAFKA_BOOTSTRAP_SERVERS" .Values.kafka.bootstrapServers -}}
{{- /* Each process stays not ready until its topics exist with this count (the topic Job's). */ -}}
{{- $_ := set $d "KAFKA_TOPIC_PARTITIONS" (toString .Values.kafka.topics.partitions) -}}
{{- range $name, $def := fromYaml (include "bp.componentDefs" .) -}}
{{- $_ := set $d $def.hostEnv "0.0.0.0" -}}
{{- $_ := set $d $def.portEnv (toString $def.port) -}}
{{- $_ := set $d $def.metricsPortEnv (toString $def.metricsPort) -}}
{{- end -}}
{{- $_ := set $d "AUTH_URL" (include "bp.componentUrl" (dict "root" . "component" "auth" "port" 8081)) -}}
{{- $_ := set $d "BOOKMARKS_URL" (include "bp.componentUrl" (dict "root" . "component" "bookmarks" "port" 8082)) -}}
{{- $_ := set $d "ENRICHMENT_URL" (include "bp.componentUrl" (dict "root" . "component" "enrichment-api" "port" 8083)) -}}
{{- $_ := set $d "ACCESS_TOKEN_TTL_SECONDS" (toString $c.accessTokenTtlSeconds) -}}
{{- $_ := set $d "REFRESH_TOKEN_TTL_SECONDS" (toString $c.refreshTokenTtlSeconds) -}}
{{- range $prefix, $idp := dict "IDP_A" $c.identityProviders.idpA "IDP_B" $c.identityProviders.idpB -}}
{{- if $idp.jwksUrl -}}
{{- $_ := set $d (printf "%s_JWKS_URL" $prefix) $idp.jwksUrl -}}
{{- $_ := set $d (printf "%s_ISSUER" $prefix) $idp.issuer -}}
{{- $_ := set $d (printf "%s_AUDIENCE" $prefix) $idp.audience -}}
{{- end -}}
{{- end -}}
{{- $e := $c.enrichment -}}
{{- $_ := set $d "ENRICHMENT_BROWSER" $e.browser -}}
{{- $_ := set $d "ENRICHMENT_ALLOW_PRIVATE_NETWORKS" (ternary "true" "false" $e.allowPrivateNetworks) -}}
{{- $_ := set $d "ENRICHMENT_RETRY_DELAYS_SECONDS" (join "," $e.retryDelaysSeconds) -}}
{{- $_ := set $d "ENRICHMENT_FETCH_TIMEOUT_SECONDS" (toString $e.fetchTimeoutSeconds) -}}
{{- $_ := set $d "ENRICHMENT_MAX_PAGE_BYTES" (toString (int64 $e.maxPageBytes)) -}}
{{- $_ := set $d "ENRICHMENT_CACHE_TTL_SECONDS" (toString $e.cacheTtlSeconds) -}}
{{- $_ := set $d "ANTI_ENTROPY_INTERVAL_SECONDS" (toString $e.antiEntropy.intervalSeconds) -}}
{{- $_ := set $d "ANTI_ENTROPY_USERS_PER_PAGE" (toString $e.antiEntropy.usersPerPage) -}}
{{- $_ := set $d "ANTI_ENTROPY_SETTLE_SECONDS" (toString $e.antiEntropy.settleSeconds) -}}
{{- $_ := set $d "LINK_CHECK_ENABLED" (ternary "true" "false" $e.linkChecks.enabled) -}}
{{- $_ := set $d "LINK_CHECK_INTERVAL_DAYS" (toString $e.linkChecks.intervalDays) -}}
{{- $_ := set $d "LINK_CHECK_RETRY_HOURS" (toString $e.linkChecks.retryHours) -}}
{{- $_ := set $d "LINK_CHECK_RATE_PER_SECOND" (toString $e.linkChecks.ratePerSecond) -}}
{{- with $e.llm.baseUrl }}{{ $_ := set $d "OPENAI_BASE_URL" . }}{{ end -}}
{{- with $e.llm.model }}{{ $_ := set $d "ENRICHMENT_LLM_MODEL" . }}{{ end -}}
{{- with $c.otelExporterOtlpEndpoint }}{{ $_ := set $d "OTEL_EXPORTER_OTLP_ENDPOINT" . }}{{ end -}}
{{- $_ := set $d "TRACES_SAMPLE_RATIO" (toString $c.tracesSampleRatio) -}}
{{- if not (kindIs "invalid" $c.gateway.rateLimitPerMinute) -}}
{{- $_ := set $d "GATEWAY_RATE_LIMIT_PER_MINUTE" (toString $c.gateway.rateLimitPerMinute) -}}
{{- end -}}
{{- with $c.gateway.corsOrigins }}{{ $_ := set $d "GATEWAY_CORS_ORIGINS" (join "," .) }}{{ end -}}
{{- $hops := $c.gateway.trustedProxyHops -}}
{{- if kindIs "invalid" $hops }}{{ $hops = ternary 1 0 .Values.ingress.enabled }}{{ end -}}
{{- $_ := set $d "GATEWAY_TRUSTED_PROXY_HOPS" (toString $hops) -}}
{{- if not (kindIs "invalid" $c.auth.anonymousRateLimitPerMinute) -}}
{{- $_ := set $d "AUTH_ANONYMOUS_RATE_LIMIT_PER_MINUTE" (toString $c.auth.anonymousRateLimitPerMinute) -}}
{{- end -}}
{{- $db := $c.database -}}
{{- $_ := set $d "DB_CONNECT_TIMEOUT_SECONDS" (toString $db.connectTimeoutSeconds) -}}
{{- $_ := set $d "DB_ACQUIRE_TIMEOUT_SECONDS" (toString $db.acquireTimeoutSeconds) -}}
{{- $_ := set $d "DB_STATEMENT_TIMEOUT_SECONDS" (toString $db.statementTimeoutSeconds) -}}
{{- $_ := set $d "DB_READY_GRACE_SECONDS" (toString $db.readyGraceSeconds) -}}
{{- range $k, $v := $c.extraEnv -}}
{{- $_ := set $d $k (toString $v) -}}
{{- end -}}
{{- toYaml $d -}}
{{- end -}}

{{/* The same data as a container env list (for hook Jobs). */}}
{{- define "bp.configEnvList" -}}
{{- range $k, $v := fromYaml (include "bp.configData" .) }}
- name: {{ $k }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- end -}}

{{/*
Secret environment of one component, every value a secretKeyRef into an operator-created Secret.
Call with (dict "root" $ "component" "auth").
*/}}
{{- define "bp.secretEnv" -}}
{{- $s := .root.Values.secrets -}}
{{- if eq .component "auth" }}
- name: DATABASE_URL_AUTH
  valueFrom:
    secretKeyRef:
      name: {{ $s.database.existingSecret }}
      key: {{ $s.database.authKey }}
- name: ADMIN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ $s.app.existingSecret }}
      key: {{ $s.app.adminTokenKey }}
      optional: true
{{- else if eq .component "bookmarks" }}
- name: DATABASE_URL_BOOKMARKS
  valueFrom:
    secretKeyRef:
      name: {{ $s.database.existingSecret }}
      key: {{ $s.database.bookmarksKey }}
- name: BOOKMARKS_CURSOR_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ $s.app.existingSecret }}
      key: {{ $s.app.cursorSecretKey }}
{{- else if hasPrefix "enrichment" .component }}
- name: DATABASE_URL_ENRICHMENT
  valueFrom:
    secretKeyRef:
      name: {{ $s.database.existingSecret }}
      key: {{ $s.database.enrichmentKey }}
- name: OPENAI_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $s.app.existingSecret }}
      key: {{ $s.app.openaiApiKeyKey }}
      optional: true
{{- end }}
{{- end -}}

{{- define "bp.podSecurityContext" -}}
{{ toYaml .Values.podSecurityContext }}
{{- end -}}

{{- define "bp.containerSecurityContext" -}}
{{ toYaml .Values.containerSecurityContext }}
{{- end -}}

{{/* Guards that make a broken configuration fail at template time rather than at runtime. */}}
{{- define "bp.validate" -}}
{{- if not .Values.kafka.bootstrapServers -}}
{{- fail "kafka.bootstrapServers is required (comma-separated host:port list of the external Kafka)" -}}
{{- end -}}
{{- if not .Values.secrets.database.existingSecret -}}
{{- fail "secrets.database.existingSecret is required (Secret holding the DATABASE_URL_* keys)" -}}
{{- end -}}
{{- if not .Values.secrets.signingKeys.existingSecret -}}
{{- fail "secrets.signingKeys.existingSecret is required (Secret holding current.pem and optional previous.pem)" -}}
{{- end -}}
{{- if not .Values.secrets.app.existingSecret -}}
{{- fail "secrets.app.existingSecret is required (Secret holding BOOKMARKS_CURSOR_SECRET)" -}}
{{- end -}}
{{- $e := .Values.config.enrichment -}}
{{- if ne (len $e.retryDelaysSeconds) 2 -}}
{{- fail "config.enrichment.retryDelaysSeconds must hold exactly two delays (before retry 1 and retry 2)" -}}
{{- end -}}
{{- range $name, $idp := .Values.config.identityProviders -}}
{{- if and $idp.jwksUrl (or (not $idp.issuer) (not $idp.audience)) -}}
{{- fail (printf "config.identityProviders.%s: jwksUrl needs issuer and audience too" $name) -}}
{{- end -}}
{{- end -}}
{{- range $name, $def := fromYaml (include "bp.componentDefs" .) -}}
{{- $v := index $.Values $def.key -}}
{{- if and $v.autoscaling.enabled (gt (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas)) -}}
{{- fail (printf "%s.autoscaling.minReplicas must not exceed maxReplicas" $def.key) -}}
{{- end -}}
{{- if and $v.autoscaling.enabled (kindIs "invalid" $v.autoscaling.targetCPUUtilizationPercentage) (kindIs "invalid" $v.autoscaling.targetMemoryUtilizationPercentage) -}}
{{- fail (printf "%s.autoscaling needs targetCPUUtilizationPercentage or targetMemoryUtilizationPercentage" $def.key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
