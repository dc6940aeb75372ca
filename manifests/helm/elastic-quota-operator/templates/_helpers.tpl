{{/* Names, labels and small shared pieces of the chart. */}}

{{/* The chart name (nameOverride wins). */}}
{{- define "elastic-quota-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name, the prefix of every object's name: fullnameOverride, else the release name if it
already contains the chart name, else "<release>-<chart>"; at most 63 characters (DNS label).
*/}}
{{- define "elastic-quota-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* "<chart>-<version>" for the helm.sh/chart label. */}}
{{- define "elastic-quota-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels of every object. */}}
{{- define "elastic-quota-operator.labels" -}}
helm.sh/chart: {{ include "elastic-quota-operator.chart" . }}
{{ include "elastic-quota-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The labels selecting the operator's pods (immutable in a Deployment: never add to them). */}}
{{- define "elastic-quota-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "elastic-quota-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The ServiceAccount the operator runs as. */}}
{{- define "elastic-quota-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "elastic-quota-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The image reference: repository@digest when a digest is given, else repository:tag, the tag
defaulting to the chart's appVersion.
*/}}
{{- define "elastic-quota-operator.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/* The Secret holding the webhook serving certificate (tls.crt, tls.key, ca.crt). */}}
{{/* In `secret` mode the one you named (webhooks.certificate.secretName, required). */}}
{{- define "elastic-quota-operator.webhookSecretName" -}}
{{- if eq .Values.webhooks.certificate.mode "secret" }}
{{- required "webhooks.certificate.secretName: the Secret with tls.crt, tls.key and ca.crt (mode secret)" .Values.webhooks.certificate.secretName }}
{{- else }}
{{- printf "%s-webhook-tls" (include "elastic-quota-operator.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* The cert-manager Certificate of the webhook server (also the CA injector's source). */}}
{{- define "elastic-quota-operator.webhookCertificateName" -}}
{{- printf "%s-webhook" (include "elastic-quota-operator.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The DNS name the API server calls the webhooks at: the Service in the release namespace. */}}
{{- define "elastic-quota-operator.serviceHost" -}}
{{- printf "%s.%s.svc" (include "elastic-quota-operator.fullname" .) .Release.Namespace }}
{{- end }}

{{/* Every DNS name of the Service, for the serving certificate. */}}
{{- define "elastic-quota-operator.serviceDNSNames" -}}
{{- $service := include "elastic-quota-operator.fullname" . -}}
{{- $namespace := .Release.Namespace -}}
{{- list $service (printf "%s.%s" $service $namespace) (printf "%s.%s.svc" $service $namespace) (printf "%s.%s.svc.%s" $service $namespace .Values.clusterDomain) | toJson }}
{{- end }}

{{/*
The PodDisruptionBudget's API: policy/v1 where the cluster serves it (Kubernetes 1.21+), else
policy/v1beta1. `helm template` without a cluster claims policy/v1 whatever --kube-version says
(its built-in API list is Helm's own), so the Kubernetes version is checked too.
*/}}
{{- define "elastic-quota-operator.pdbApiVersion" -}}
{{- if and (.Capabilities.APIVersions.Has "policy/v1") (semverCompare ">=1.21-0" .Capabilities.KubeVersion.Version) -}}
policy/v1
{{- else -}}
policy/v1beta1
{{- end }}
{{- end }}

{{/*
"true" where the quota webhook gets its matchConditions (webhooks.matchConditions: auto, for
Kubernetes 1.28+, where API servers have them; true; false), else empty.
*/}}
{{- define "elastic-quota-operator.quotaMatchConditions" -}}
{{- $wanted := .Values.webhooks.matchConditions -}}
{{- if eq (toString $wanted) "auto" -}}
{{- if semverCompare ">=1.28-0" .Capabilities.KubeVersion.Version }}true{{ end -}}
{{- else if $wanted }}true{{ end -}}
{{- end -}}

{{/* Mount points inside the container. */}}
{{- define "elastic-quota-operator.webhookCertDir" -}}
/etc/elastic-quota/webhook
{{- end }}
{{- define "elastic-quota-operator.numbaCacheDir" -}}
/var/cache/numba
{{- end }}

{{/*
The values that are numbers, each with its range: values.schema.json's, which checks a value
given as a number. `helm --set` types only integers (`--set operator.reconcileInterval=0.5` gives
the string "0.5"), so the schema also takes a decimal string (its pattern refuses any other
text); such a string is compared with the range here, as a number, and passed on as it is
written, which is the text the operator parses. tests/unit/test_chart_numbers.py holds these
ranges equal to the schema's. A range of one bound has no maximum.
*/}}
{{- define "elastic-quota-operator.checkNumbers" -}}
{{- $ranges := dict
  "operator.loopStallReportAfter" (list 0.02 60)
  "operator.reconcileInterval" (list 0.01 3600)
  "operator.profileDebounce" (list 0 3600)
  "operator.revocationDelay" (list 0 604800)
  "operator.revocationInterval" (list 0.01 3600)
  "operator.revocationMinRuntime" (list 0 604800)
  "operator.preemptionMinRuntime" (list 0 604800)
  "operator.evictionRate" (list 0.01 1000)
  "operator.leaseDuration" (list 1 3600)
  "operator.leaseRenewDeadline" (list 0.01 3600)
  "operator.leaseRetryPeriod" (list 0.01 60)
  "operator.apiTimeout" (list 0.1 30)
  "metrics.prometheusRule.overRuntimeMarginSeconds" (list 0)
  "metrics.prometheusRule.userLimitHoldingSeconds" (list 60 604800)
  "webhooks.certificate.checkInterval" (list 1 3600) }}
{{- range $path, $range := $ranges }}
{{- $value := $.Values }}
{{- range splitList "." $path }}
{{- $value = index $value . }}
{{- end }}
{{- if not (kindIs "invalid" $value) }}
{{- if lt (float64 $value) (float64 (first $range)) }}
{{- fail (printf "%s %v is below its minimum, %v" $path $value (first $range)) }}
{{- end }}
{{- if eq (len $range) 2 }}
{{- if gt (float64 $value) (float64 (last $range)) }}
{{- fail (printf "%s %v is above its maximum, %v" $path $value (last $range)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The rules between values that the operator's settings have (settings/model.py, lease.py,
webhooks.py): refused here, naming the values, rather than by the operator at start-up (exit 2,
a pod in CrashLoopBackOff after an install that succeeded). An unset operator.leaseRetryPeriod
is the operator's 0.5 s, an unset operator.leaseRenewDeadline two thirds of leaseDuration (as
LeaseSettings computes it).
*/}}
{{- define "elastic-quota-operator.checkSettings" -}}
{{- include "elastic-quota-operator.checkNumbers" . }}
{{- $op := .Values.operator }}
{{- if and .Values.webhooks.enabled (eq (int .Values.metrics.port) (int .Values.webhooks.port)) }}
{{- fail (printf "metrics.port and webhooks.port are both %d: two servers cannot listen on one port; give them two" (int .Values.metrics.port)) }}
{{- end }}
{{- $duration := float64 $op.leaseDuration }}
{{- $retry := ternary 0.5 $op.leaseRetryPeriod (kindIs "invalid" $op.leaseRetryPeriod) | float64 }}
{{- if gt (mulf $retry 2) $duration }}
{{- fail (printf "operator.leaseRetryPeriod %v must be at most half of operator.leaseDuration (%v): a standby must look at the Lease at least twice before it expires" $op.leaseRetryPeriod $op.leaseDuration) }}
{{- end }}
{{- $deadline := ternary (divf (mulf $duration 2) 3) $op.leaseRenewDeadline (kindIs "invalid" $op.leaseRenewDeadline) | float64 }}
{{- if or (ge $deadline $duration) (le $deadline $retry) }}
{{- fail (printf "operator.leaseRenewDeadline %v must be below operator.leaseDuration (%v) and above operator.leaseRetryPeriod (%v s); null: two thirds of leaseDuration" $deadline $op.leaseDuration $retry) }}
{{- end }}
{{- $cert := .Values.webhooks.certificate }}
{{- if and .Values.webhooks.enabled (eq $cert.mode "operator") }}
{{- if ge (int $cert.renewBeforeDays) (min (int $cert.validityDays) (int $cert.caValidityDays)) }}
{{- fail (printf "webhooks.certificate.renewBeforeDays %v must be below validityDays (%v) and caValidityDays (%v): a certificate would be renewed before it is valid" $cert.renewBeforeDays $cert.validityDays $cert.caValidityDays) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The namespaces the pod and workload webhooks never see (a JSON list): kube-system, the release
namespace (the operator's own pods must start even when no replica serves),
operator.ignoreNamespaces (never judged) and webhooks.excludeNamespaces.
*/}}
{{- define "elastic-quota-operator.podWebhookExcludedNamespaces" -}}
{{- concat (list "kube-system" .Release.Namespace) .Values.operator.ignoreNamespaces .Values.webhooks.excludeNamespaces | uniq | sortAlpha | toJson }}
{{- end }}
