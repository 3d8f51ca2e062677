"""Builds an OTLP ExportProfilesServiceRequest with OpenTelemetry's own generated Python messages
(opentelemetry-proto, pinned in requirements.txt) from a JSON description, and writes its bytes
to the file named by the second argument. tests/otlp_receive.rs sends them to
otelcol.receiver.otlp and compares what the store holds with the same description.

Description (first argument, a JSON file): {"profiles": [profile, ...]}, each profile
  {"resource": {key: string value}, "scope": name,
   "sample_type": [type, unit], "period_type": [type, unit], "period": int,
   "time_unix_nano": int, "duration_nano": int,
   "samples": [{"stack": [[function, file, line], ...] (leaf first), "value": int,
                "attributes": {key: string value}}]}
Every table of the request-wide dictionary starts with its zero value and is deduplicated, as
the specification asks; each profile becomes its own ResourceProfiles."""

import json
import sys

from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.profiles.v1development import profiles_pb2


class Dictionary:
    def __init__(self):
        self.d = profiles_pb2.ProfilesDictionary()
        self.index = {}
        self.string("")
        self.d.mapping_table.add()
        self.d.function_table.add()
        self.d.location_table.add()
        self.d.stack_table.add()
        self.d.attribute_table.add()
        self.d.link_table.add()

    def _intern(self, table, key, make):
        k = (table, key)
        if k not in self.index:
            make()
            self.index[k] = len(getattr(self.d, table)) - 1
        return self.index[k]

    def string(self, s):
        return self._intern("string_table", s, lambda: self.d.string_table.append(s))

    def function(self, name, filename):
        n, f = self.string(name), self.string(filename)
        return self._intern(
            "function_table",
            (n, f),
            lambda: self.d.function_table.add(name_strindex=n, system_name_strindex=n, filename_strindex=f),
        )

    def location(self, name, filename, line):
        fn = self.function(name, filename)

        def make():
            loc = self.d.location_table.add()
            loc.lines.add(function_index=fn, line=line)

        return self._intern("location_table", (fn, line), make)

    def stack(self, frames):
        locs = tuple(self.location(*f) for f in frames)
        return self._intern("stack_table", locs, lambda: self.d.stack_table.add(location_indices=locs))

    def attribute(self, key, value):
        k = self.string(key)

        def make():
            a = self.d.attribute_table.add(key_strindex=k)
            a.value.string_value = value

        return self._intern("attribute_table", (k, value), make)


def main():
    with open(sys.argv[1]) as f:
        desc = json.load(f)
    req = profiles_service_pb2.ExportProfilesServiceRequest()
    d = Dictionary()
    for p in desc["profiles"]:
        rp = req.resource_profiles.add()
        for k, v in p["resource"].items():
            rp.resource.attributes.add(key=k, value=common_pb2.AnyValue(string_value=v))
        sp = rp.scope_profiles.add()
        sp.scope.name = p["scope"]
        prof = sp.profiles.add()
        prof.sample_type.type_strindex = d.string(p["sample_type"][0])
        prof.sample_type.unit_strindex = d.string(p["sample_type"][1])
        prof.period_type.type_strindex = d.string(p["period_type"][0])
        prof.period_type.unit_strindex = d.string(p["period_type"][1])
        prof.period = p["period"]
        prof.time_unix_nano = p["time_unix_nano"]
        prof.duration_nano = p["duration_nano"]
        prof.profile_id = bytes(range(16))
        for s in p["samples"]:
            sample = prof.samples.add(stack_index=d.stack(s["stack"]))
            sample.values.append(s["value"])
            for k, v in sorted(s.get("attributes", {}).items()):
                sample.attribute_indices.append(d.attribute(k, v))
    req.dictionary.CopyFrom(d.d)
    with open(sys.argv[2], "wb") as f:
        f.write(req.SerializeToString())


if __name__ == "__main__":
    main()
