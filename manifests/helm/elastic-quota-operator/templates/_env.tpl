{{/*
The operator container's environment (templates/deployment.yaml): the variables the chart sets,
each at its place, then the operator.extraEnv entries of other names in their order. An extraEnv
entry named like one of the chart's replaces it where it stands: every name once, as kubectl
diff, server-side apply and GitOps tools need (a list with a name twice is refused or flaps
between two values), with the user's value, which Kubernetes would also have kept. A name given
twice in extraEnv is refused.

The chart's list is rendered as text (comments included, as the plain manifests keep them): each
of its entries starts with a line "- name: ELASTIC_QUOTA_..." (or another name) at the margin,
followed by its lines, indented; an entry replaced is written as the user's entry.
*/}}
{{- define "elastic-quota-operator.env" -}}
{{- $extra := dict }}
{{- range .Values.operator.extraEnv }}
{{- if hasKey $extra .name }}
{{- fail (printf "operator.extraEnv names %s twice: give each variable once" .name) }}
{{- end }}
{{- $_ := set $extra .name . }}
{{- end }}
{{- $replaced := dict }}
{{- $inReplaced := false }}
{{- range $line := splitList "\n" (include "elastic-quota-operator.chartEnv" .) }}
{{- if hasPrefix "- name: " $line }}
{{- $name := trimPrefix "- name: " $line }}
{{- $inReplaced = hasKey $extra $name }}
{{- if $inReplaced }}
{{- $_ := set $replaced $name true }}
{{ toYaml (list (get $extra $name)) }}
{{- else }}
{{ $line }}
{{- end }}
{{- else if not (and $inReplaced (hasPrefix " " $line)) }}
{{- $inReplaced = false }}
{{- if trim $line }}
{{ $line }}
{{- end }}
{{- end }}
{{- end }}
{{- range .Values.operator.extraEnv }}
{{- if not (hasKey $replaced .name) }}
{{ toYaml (list .) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The variables the chart sets: the operator's settings from the values (a value left null is not
passed: the operator's own default), the pod's identity, numba's cache, Python's.
*/}}
{{- define "elastic-quota-operator.chartEnv" -}}
{{- $fullname := include "elastic-quota-operator.fullname" . }}
{{- $op := .Values.operator }}
{{- $certDir := include "elastic-quota-operator.webhookCertDir" . }}
{{- $cert := .Values.webhooks.certificate }}
# Who this replica is in the Lease: the pod name, the same across restarts of the
# container, so that a restarted operator takes its own Lease back at once.
- name: ELASTIC_QUOTA_IDENTITY
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
# The Lease lives in the pod's namespace (the release namespace, where the Role is).
- name: ELASTIC_QUOTA_LEASE_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: ELASTIC_QUOTA_LEASE_NAME
  value: {{ $op.leaseName | quote }}
- name: ELASTIC_QUOTA_LEASE_DURATION
  value: {{ $op.leaseDuration | quote }}
{{- if not (kindIs "invalid" $op.leaseRenewDeadline) }}
- name: ELASTIC_QUOTA_LEASE_RENEW_DEADLINE
  value: {{ $op.leaseRenewDeadline | quote }}
{{- end }}
{{- if not (kindIs "invalid" $op.leaseRetryPeriod) }}
- name: ELASTIC_QUOTA_LEASE_RETRY_PERIOD
  value: {{ $op.leaseRetryPeriod | quote }}
{{- end }}
- name: ELASTIC_QUOTA_RESERVED_NAMESPACE
  value: {{ $op.reservedNamespace | quote }}
- name: ELASTIC_QUOTA_LOG_LEVEL
  value: {{ $op.logLevel | quote }}
{{- if not (kindIs "invalid" $op.loopStallReportAfter) }}
- name: ELASTIC_QUOTA_LOOP_STALL_REPORT_AFTER
  value: {{ $op.loopStallReportAfter | quote }}
{{- end }}
- name: ELASTIC_QUOTA_SCALE_MIN_QUOTA
  value: {{ $op.scaleMinQuota | quote }}
- name: ELASTIC_QUOTA_RECONCILE_INTERVAL
  value: {{ $op.reconcileInterval | quote }}
- name: ELASTIC_QUOTA_PROFILE_DEBOUNCE
  value: {{ $op.profileDebounce | quote }}
- name: ELASTIC_QUOTA_REVOCATION
  value: {{ $op.revocation | quote }}
- name: ELASTIC_QUOTA_REVOCATION_DELAY
  value: {{ $op.revocationDelay | quote }}
- name: ELASTIC_QUOTA_REVOCATION_INTERVAL
  value: {{ $op.revocationInterval | quote }}
- name: ELASTIC_QUOTA_REVOCATION_AROUND_BUDGETS
  value: {{ $op.revocationAroundBudgets | quote }}
- name: ELASTIC_QUOTA_REVOCATION_MIN_RUNTIME
  value: {{ $op.revocationMinRuntime | quote }}
- name: ELASTIC_QUOTA_REVOKE_DEFAULT_QUOTA
  value: {{ $op.revokeDefaultQuota | quote }}
- name: ELASTIC_QUOTA_EVICTION_RATE
  value: {{ $op.evictionRate | quote }}
- name: ELASTIC_QUOTA_GATING
  value: {{ $op.gating | quote }}
- name: ELASTIC_QUOTA_GATING_EXCLUDE_NAMESPACES
  value: {{ toJson $op.gatingExcludeNamespaces | quote }}
- name: ELASTIC_QUOTA_PREEMPTION_MIN_RUNTIME
  value: {{ $op.preemptionMinRuntime | quote }}
- name: ELASTIC_QUOTA_USER_LIMITS_REFUSE_PODS
  value: {{ $op.userLimitsRefusePods | quote }}
- name: ELASTIC_QUOTA_IGNORE_NAMESPACES
  value: {{ toJson $op.ignoreNamespaces | quote }}
- name: ELASTIC_QUOTA_TRUSTED_IDENTITY_USERS
  value: {{ toJson $op.trustedIdentityUsers | quote }}
- name: ELASTIC_QUOTA_TRUSTED_IDENTITY_GROUPS
  value: {{ toJson $op.trustedIdentityGroups | quote }}
- name: ELASTIC_QUOTA_DEFAULT_USER
  value: {{ $op.defaultUser | quote }}
- name: ELASTIC_QUOTA_USER_METRICS_MAX_PER_QUOTA
  value: {{ $op.userMetricsMaxPerQuota | quote }}
- name: ELASTIC_QUOTA_DRY_RUN
  value: {{ $op.dryRun | quote }}
- name: ELASTIC_QUOTA_WRITE_CONCURRENCY
  value: {{ $op.writeConcurrency | quote }}
- name: ELASTIC_QUOTA_API_TIMEOUT
  value: {{ $op.apiTimeout | quote }}
{{- if not (kindIs "invalid" $op.listFromCache) }}
- name: ELASTIC_QUOTA_LIST_FROM_CACHE
  value: {{ $op.listFromCache | quote }}
{{- end }}
- name: ELASTIC_QUOTA_METRICS_PORT
  value: {{ .Values.metrics.port | quote }}
- name: ELASTIC_QUOTA_METRICS_ADDRESS
  value: {{ .Values.metrics.address | quote }}
{{- if .Values.webhooks.enabled }}
- name: ELASTIC_QUOTA_WEBHOOK_PORT
  value: {{ .Values.webhooks.port | quote }}
- name: ELASTIC_QUOTA_WEBHOOK_ADDRESS
  value: {{ .Values.webhooks.address | quote }}
- name: ELASTIC_QUOTA_WEBHOOK_HOST
  value: {{ include "elastic-quota-operator.serviceHost" . | quote }}
{{- if eq $cert.mode "operator" }}
# The operator keeps the certificate itself: a CA and a serving certificate in this
# Secret of the release namespace, made by the first replica, renewed by the active
# one before they expire, served by every replica (controller/webhooks/certrotation.py).
- name: ELASTIC_QUOTA_WEBHOOK_CERT_SECRET
  value: {{ include "elastic-quota-operator.webhookSecretName" . | quote }}
- name: ELASTIC_QUOTA_WEBHOOK_CERT_DNS_NAMES
  value: {{ include "elastic-quota-operator.serviceDNSNames" . | quote }}
- name: ELASTIC_QUOTA_WEBHOOK_CERT_VALIDITY_DAYS
  value: {{ .Values.webhooks.certificate.validityDays | quote }}
- name: ELASTIC_QUOTA_WEBHOOK_CERT_RENEW_BEFORE_DAYS
  value: {{ .Values.webhooks.certificate.renewBeforeDays | quote }}
- name: ELASTIC_QUOTA_WEBHOOK_CA_VALIDITY_DAYS
  value: {{ .Values.webhooks.certificate.caValidityDays | quote }}
{{- else }}
# The mounted Secret's files (cert-manager's, or yours); re-read when they change.
- name: ELASTIC_QUOTA_WEBHOOK_CERT_FILE
  value: {{ printf "%s/tls.crt" $certDir | quote }}
- name: ELASTIC_QUOTA_WEBHOOK_KEY_FILE
  value: {{ printf "%s/tls.key" $certDir | quote }}
- name: ELASTIC_QUOTA_WEBHOOK_CA_FILE
  value: {{ printf "%s/ca.crt" $certDir | quote }}
{{- end }}
{{- if not (kindIs "invalid" $cert.checkInterval) }}
- name: ELASTIC_QUOTA_WEBHOOK_CERT_CHECK_INTERVAL
  value: {{ .Values.webhooks.certificate.checkInterval | quote }}
{{- end }}
{{- if ne $cert.mode "certManager" }}
# The chart renders the webhook configurations without a caBundle (nothing to look
# up: helm template, Argo CD and Flux render the same): the operator sets it.
- name: ELASTIC_QUOTA_WEBHOOK_CA_BUNDLE_CONFIGURATION
  value: {{ $fullname | quote }}
{{- end }}
- name: ELASTIC_QUOTA_WEBHOOK_FAILURE_POLICY
  value: {{ .Values.webhooks.failurePolicy | quote }}
- name: ELASTIC_QUOTA_POD_WEBHOOK_FAILURE_POLICY
  value: {{ .Values.webhooks.podFailurePolicy | quote }}
# The chart owns the webhook configurations (templates/webhooks.yaml): the operator
# only serves the webhooks.
- name: ELASTIC_QUOTA_WEBHOOK_CONFIGURATION
  value: ""
{{- else }}
- name: ELASTIC_QUOTA_WEBHOOK_PORT
  value: "0"
{{- end }}
# numba's on-disk cache of the compiled kernels (the root file system is read-only):
# an emptyDir, which the operator fills at start-up from the image's precompiled seed
# ($ELASTIC_QUOTA_NUMBA_CACHE_SEED, built with NUMBA_CPU_NAME=generic, both set by
# the image), so that a new replica loads the solver kernel instead of compiling it.
- name: NUMBA_CACHE_DIR
  value: {{ include "elastic-quota-operator.numbaCacheDir" . | quote }}
- name: PYTHONDONTWRITEBYTECODE
  value: "1"
- name: PYTHONUNBUFFERED
  value: "1"
{{- end }}
