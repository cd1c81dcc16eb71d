{{- define "tidemark.labels" -}}
app.kubernetes.io/name: tidemark
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}
{{- define "tidemark.selector" -}}
app.kubernetes.io/name: tidemark
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
{{- define "tidemark.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if eq $tag "latest" }}{{ fail "image.tag latest: set a version or image.digest" }}{{ end -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end -}}
{{- define "tidemark.dbSecret" -}}
{{- if .Values.database.existingSecret.name -}}
{{ .Values.database.existingSecret.name }}
{{- else if .Values.database.cnpg.enabled -}}
{{ .Release.Name }}-db-app
{{- else -}}
{{ fail "database: set database.existingSecret.name or database.cnpg.enabled" }}
{{- end -}}
{{- end -}}
{{- define "tidemark.config" -}}
{{ .Values.config | default (.Files.Get "files/tidemark.yaml") }}
{{- end -}}
