{{- /*
llm-savings-exporter.mixinFile: one of the chart's files/rules/*.yaml or files/dashboards/*.json
with every mixin parameter token replaced by its value under .Values.mixin.

scripts/gen_mixin.py writes those files from the repository's mixin with a token
__mixin_<name>__ in each parameter's place (it checks that every parameter reaches a file
and that the default values give back rules/ and dashboards/ exactly). Inside a .json file
every token sits in a JSON string, so the value is JSON-escaped there; in the YAML rule
files tokens sit in literal blocks and double-quoted strings, whose values the schema keeps
free of quotes and newlines. A token left over (a parameter missing from the values) fails
the render with its name.

  include "llm-savings-exporter.mixinFile" (list $ "files/rules/llm-savings.rules.yaml")
*/ -}}
{{- define "llm-savings-exporter.mixinFile" -}}
{{- $root := index . 0 }}
{{- $path := index . 1 }}
{{- $text := $root.Files.Get $path }}
{{- $json := hasSuffix ".json" $path }}
{{- range $name, $value := $root.Values.mixin }}
{{- $text_value := toString $value }}
{{- if $json }}
{{- $text_value = toJson $text_value | trimPrefix "\"" | trimSuffix "\"" }}
{{- end }}
{{- $text = replace (printf "__mixin_%s__" $name) $text_value $text }}
{{- end }}
{{- $left := regexFind "__mixin_[A-Za-z0-9]+__" $text }}
{{- if $left }}
{{- fail (printf "%s: parameter %s has no value under mixin: in the values" $path (trimSuffix "__" (trimPrefix "__mixin_" $left))) }}
{{- end }}
{{- $text }}
{{- end }}
