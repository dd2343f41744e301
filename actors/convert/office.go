package convert

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// ErrNoLibreOffice is the reason an Office file fails where LibreOffice is not installed.
var ErrNoLibreOffice = fail("office conversion needs LibreOffice")

// OfficeTimeout bounds one LibreOffice conversion (a hung soffice must not hold a worker).
var OfficeTimeout = 5 * time.Minute

// sofficeBinary is the LibreOffice command unless Options.Office names another.
const sofficeBinary = "soffice"

// OfficeToPDF converts a Word, Excel or PowerPoint file to PDF with LibreOffice headless. Each
// run has its own user profile (concurrent runs sharing one race, and one silently produces
// nothing), locked down (officeLockdown), and runs without network where the kernel allows
// (isolatedCommand). It returns the PDF's path, inside work. office is the LibreOffice command
// ("": soffice).
func OfficeToPDF(ctx context.Context, office, src, kind, work string) (string, error) {
	if office == "" {
		office = sofficeBinary
	}
	bin, err := exec.LookPath(office)
	if err != nil {
		return "", ErrNoLibreOffice
	}
	in := filepath.Join(work, "document."+kind) // LibreOffice picks its filter by extension too
	if err := os.MkdirAll(work, 0o750); err != nil {
		return "", err
	}
	if err := os.Link(src, in); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	octx, cancel := context.WithTimeout(ctx, OfficeTimeout)
	defer cancel()
	profile := filepath.Join(work, "lo-profile")
	if err := os.MkdirAll(filepath.Join(profile, "user"), 0o750); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(profile, "user", "registrymodifications.xcu"), []byte(officeLockdown), 0o640); err != nil {
		return "", err
	}
	// LibreOffice's scratch folder (lu<pid>….tmp) goes under work, not the system's temp
	// folder: a run killed (cancel, timeout, shutdown) never removes it itself, and work is
	// removed with the conversion (found by a review: one folder leaked per killed run).
	tmp := filepath.Join(work, "lo-tmp")
	if err := os.MkdirAll(tmp, 0o750); err != nil {
		return "", err
	}
	out := filepath.Join(work, "pdf")
	_, err = isolatedCommand(octx, []string{"TMPDIR=" + tmp, "TMP=" + tmp, "TEMP=" + tmp}, bin, "--headless", "--norestore", "--nolockcheck", "--nodefault",
		"-env:UserInstallation=file://"+profile, "--convert-to", "pdf", "--outdir", out, in)
	if err != nil {
		if ctx.Err() != nil { // the conversion was cancelled
			return "", ctx.Err()
		}
		if octx.Err() != nil {
			return "", fail(fmt.Sprintf("LibreOffice did not finish converting the file within %s", OfficeTimeout))
		}
		return "", fail("LibreOffice could not convert the file: " + err.Error())
	}
	pdf := filepath.Join(out, "document.pdf")
	if st, err := os.Stat(pdf); err != nil || st.Size() == 0 {
		return "", fail("LibreOffice could not convert the file (it may be damaged or password-protected)")
	}
	return pdf, nil
}

// officeLockdown is the user profile's configuration of every run. An uploaded document is
// untrusted: a linked image (a DOCX relationship with TargetMode="External", an INCLUDEPICTURE
// field) would otherwise be fetched by LibreOffice itself, from any address, past the service's
// outbound guard, or read from the server's disk (file://) and drawn into the public pages.
// BlockUntrustedRefererLinks makes LibreOffice refuse every link of a document not in a trusted
// location (there are none); macros never run.
const officeLockdown = `<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="BlockUntrustedRefererLinks" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="DisableMacrosExecution" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="MacroSecurityLevel" oor:op="fuse"><value>3</value></prop></item>
</oor:items>
`
