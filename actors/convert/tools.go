package convert

import (
	"fmt"
	"os/exec"
	"strings"
)

// Converter is one family of source files and the external programs converting it needs.
type Converter struct {
	Name     string   `json:"name"`     // pdf, office, images
	Kinds    []string `json:"kinds"`    // source kinds it converts
	Programs []string `json:"programs"` // commands it runs (none: pure Go)
	Packages []string `json:"packages"` // Debian packages providing them
	Missing  []string `json:"missing"`  // programs not found on PATH (empty: usable)
}

// Usable reports whether every program the converter runs is installed.
func (c Converter) Usable() bool { return len(c.Missing) == 0 }

// Unusable is why files of the converter's kinds cannot be converted here ("" when usable).
func (c Converter) Unusable() string {
	if c.Usable() {
		return ""
	}
	return fmt.Sprintf("this server cannot convert %s files: %s not installed (Debian: apt-get install %s)",
		c.label(), strings.Join(c.Missing, ", ")+verb(len(c.Missing)), strings.Join(c.Packages, " "))
}

func (c Converter) label() string {
	switch c.Name {
	case "pdf":
		return "PDF"
	case "office":
		return "Word, Excel and PowerPoint"
	}
	return c.Name
}

func verb(n int) string {
	if n == 1 {
		return " is"
	}
	return " are"
}

var popplerPrograms = []string{"pdfinfo", "pdftoppm", "pdftotext"}

// Converters checks PATH for the programs each converter runs (a few stat calls: cheap enough
// per upload, so installing a package takes effect without a restart).
func Converters() []Converter {
	office := append([]string{sofficeBinary}, popplerPrograms...) // Office files become PDFs first
	cs := []Converter{
		{Name: "pdf", Kinds: []string{KindPDF}, Programs: popplerPrograms, Packages: []string{"poppler-utils"}},
		{Name: "office", Kinds: []string{KindDOC, KindDOCX, KindXLS, KindXLSX, KindPPT, KindPPTX}, Programs: office,
			Packages: []string{"libreoffice-writer-nogui", "libreoffice-calc-nogui", "libreoffice-impress-nogui",
				"fonts-liberation", "poppler-utils"}},
		{Name: "images", Kinds: []string{KindJPG, KindPNG}, Programs: []string{}, Packages: []string{}},
	}
	for i := range cs {
		cs[i].Missing = []string{}
		for _, p := range cs[i].Programs {
			if _, err := exec.LookPath(p); err != nil {
				cs[i].Missing = append(cs[i].Missing, p)
			}
		}
	}
	return cs
}

// CanConvert returns nil when a source kind can be converted on this machine, else an error
// saying which programs are missing and which packages provide them.
func CanConvert(kind string) error {
	for _, c := range Converters() {
		for _, k := range c.Kinds {
			if k == kind && !c.Usable() {
				return fail(c.Unusable())
			}
		}
	}
	return nil
}
