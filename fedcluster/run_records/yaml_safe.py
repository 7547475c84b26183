"""YAML read as data, never as code: PyYAML's safe constructor and resolver, over its C parser (libyaml) where
PyYAML was built with it (its wheels are), else its Python parser.

Why: the reports read every archived run's config.yaml (`fedcluster-report reproductions`: about 2,400 loads); with
the Python parser each took ~15 ms, most of that command's time. The C parser yields the same events to the same
safe constructor, so the same objects, and raises the same yaml.YAMLError classes."""
import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text):
    """The one YAML document in `text` (a str or a stream) as plain data: yaml.safe_load's result."""
    return yaml.load(text, Loader=_LOADER)
