"""Decodes an OTLP ExportProfilesServiceRequest (the file named by the first argument) with
OpenTelemetry's own generated Python messages, and prints what a reader sees as JSON: per
profile, its resource attributes, sample type, period and samples, each sample as its stack
(per location, the lines: function name, file name, line number; leaf first) with its
attributes and value. Every index is resolved through the request's dictionary here,
independently of the Rust code under test."""

import json
import sys

from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2


def any_value(v):
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    return getattr(v, kind)


def main():
    with open(sys.argv[1], "rb") as f:
        req = profiles_service_pb2.ExportProfilesServiceRequest.FromString(f.read())
    d = req.dictionary
    s = d.string_table
    assert s[0] == "", "string_table[0] must be empty"

    def attribute(i):
        kv = d.attribute_table[i]
        value = any_value(kv.value)
        if kv.value.WhichOneof("value") == "string_value_strindex":
            value = s[value]
        return s[kv.key_strindex], value, s[kv.unit_strindex]

    out = []
    for rp in req.resource_profiles:
        resource = {kv.key: any_value(kv.value) for kv in rp.resource.attributes}
        for sp in rp.scope_profiles:
            for p in sp.profiles:
                samples = []
                for sample in p.samples:
                    stack = []
                    for li in d.stack_table[sample.stack_index].location_indices:
                        loc = d.location_table[li]
                        stack.append(
                            [
                                [
                                    s[d.function_table[ln.function_index].name_strindex],
                                    s[d.function_table[ln.function_index].filename_strindex],
                                    ln.line,
                                ]
                                for ln in loc.lines
                            ]
                        )
                    attrs = sorted(
                        [k, str(v), u] for k, v, u in map(attribute, sample.attribute_indices)
                    )
                    value = sum(sample.values) if sample.values else len(sample.timestamps_unix_nano)
                    samples.append([stack, attrs, value])
                out.append(
                    {
                        "resource": resource,
                        "scope": sp.scope.name,
                        "type": [s[p.sample_type.type_strindex], s[p.sample_type.unit_strindex]],
                        "period_type": [s[p.period_type.type_strindex], s[p.period_type.unit_strindex]],
                        "period": p.period,
                        "time_unix_nano": p.time_unix_nano,
                        "profile_id": p.profile_id.hex(),
                        "samples": samples,
                    }
                )
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
