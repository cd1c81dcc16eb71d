package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

// OutputFlag is -o table|json|yaml, shared by every command that prints
// data. json and yaml print the API's JSON as the server sent it (nulls stay
// null, field order stays), so a script sees the API's object, not a copy.
type OutputFlag struct{ format string }

func (o *OutputFlag) Register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.format, "output", "o", "table", "output format: table, json or yaml")
}

func (o *OutputFlag) Check() error {
	switch o.format {
	case "table", "json", "yaml":
		return nil
	case "text": // the flag's name before table, kept for scripts
		o.format = "table"
		return nil
	}
	return fmt.Errorf("--output %q: want table, json or yaml", o.format)
}

// print writes raw (the API's JSON) as json or yaml, or calls table.
func (o *OutputFlag) print(w io.Writer, raw []byte, table func() error) error {
	switch o.format {
	case "json":
		var b bytes.Buffer
		if err := json.Indent(&b, raw, "", "  "); err != nil {
			return fmt.Errorf("answer is not JSON: %w", err)
		}
		b.WriteByte('\n')
		_, err := w.Write(b.Bytes())
		return err
	case "yaml":
		y, err := jsonToYAML(raw)
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	}
	return table()
}

// PrintValue prints v, a value this command made rather than an API answer
// (token list), in the chosen format.
func (o *OutputFlag) PrintValue(w io.Writer, v any, table func() error) error {
	if o.format == "table" {
		return table()
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return o.print(w, raw, table)
}

// jsonToYAML converts through yaml.v3's node tree, which keeps the JSON's
// key order and its nulls; the styles JSON implies (flow, quoted) are reset
// so the result reads as block YAML.
func jsonToYAML(raw []byte) ([]byte, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("answer is not JSON: %w", err)
	}
	var plain func(*yaml.Node)
	plain = func(n *yaml.Node) {
		n.Style = 0
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			n.Value = "null"
		}
		for _, c := range n.Content {
			plain(c)
		}
	}
	plain(&n)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}
