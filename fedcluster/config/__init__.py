"""From the command line to a checked config: the schemas derived from the classes' signatures and
registered with Hydra (store, schema), the config folder and the plugins that add options to it
(conf_dir, plugins), composing overrides (composition) and the checks of every declared rule before
anything is written (validate). The rule vocabulary itself (fedcluster/rules.py) stays a leaf at
the package root, since the classes that declare rules are imported from here."""
