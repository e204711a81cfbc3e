{{- define "kueue-graphql.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kueue-graphql.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "kueue-graphql.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kueue-graphql.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kueue-graphql.labels" -}}
{{ include "kueue-graphql.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "kueue-graphql.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kueue-graphql.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
The impersonation the ClusterRole grants: constrained (KEP-5284) or legacy. "auto" picks
constrained from Kubernetes 1.36 on, where the feature is beta and on by default, and refuses to
guess below: legacy impersonation makes the ServiceAccount as powerful as cluster-admin.
*/}}
{{- define "kueue-graphql.impersonation" -}}
{{- $mode := .Values.rbac.impersonation -}}
{{- if eq $mode "auto" -}}
{{- if semverCompare ">=1.36.0-0" .Capabilities.KubeVersion.Version -}}
constrained
{{- else -}}
{{- fail (printf "Kubernetes %s has no constrained impersonation on by default (KEP-5284 is beta from 1.36): set rbac.impersonation=constrained if the ConstrainedImpersonation feature gate is on, or rbac.impersonation=legacy after reading its risk in values.yaml" .Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- else -}}
{{- $mode -}}
{{- end -}}
{{- end -}}

{{/*
Every resource the service reads (kueue_graphql/kube/resources.py), as RBAC rules without verbs.
tests/chart checks that this list and the service's agree.
*/}}
{{- define "kueue-graphql.readResources" -}}
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads, localqueues, clusterqueues, cohorts, resourceflavors, admissionchecks, workloadpriorityclasses, topologies]
- apiGroups: [visibility.kueue.x-k8s.io]
  resources: [localqueues/pendingworkloads]
- apiGroups: [batch]
  resources: [jobs]
# The other owners of Workloads the service follows to their Pods (kube/resources.py OWNER_KINDS).
- apiGroups: [jobset.x-k8s.io]
  resources: [jobsets]
- apiGroups: [ray.io]
  resources: [rayjobs, rayclusters]
- apiGroups: [""]
  resources: [pods, events, nodes, namespaces]
# Kueue's manager Deployment, read for Diagnosis.kueueVersion (the caller's own access decides);
# StatefulSets, owners of pod-group Workloads.
- apiGroups: [apps]
  resources: [deployments, statefulsets]
# PriorityClasses, read for whatIf's priorityClass when no WorkloadPriorityClass has the name.
- apiGroups: [scheduling.k8s.io]
  resources: [priorityclasses]
{{- end -}}
