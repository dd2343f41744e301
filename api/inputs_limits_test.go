package api

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Limits written in struct tags are the package's named limits: a tag that drifts from its
// constant (or the constant from the tag) fails here.
func TestTagLimitsMatchConstants(t *testing.T) {
	t.Parallel()
	param := func(ps []Param, name string) Param {
		t.Helper()
		i := paramIndex(ps, name)
		require.GreaterOrEqual(t, i, 0, name)
		return ps[i]
	}
	konva := ParamsOf[KonvaCreate]()
	require.Equal(t, MaxPageImageChars, param(konva, "page_images").Items.MaxLen)
	require.Equal(t, MaxPageImageChars, param(konva, "thumbnail").MaxLen)
	require.Equal(t, MaxTemplateItems, param(ParamsOf[TemplateCreate](), "content").MaxItems)
	q := ParamsOf[AnalyticsQuery]()
	require.Equal(t, float64(MaxAnalyticsLimit), *param(q, "limit").Max)
	require.Contains(t, param(q, "limit").Desc, "(default 100)")
	require.Equal(t, 100, DefaultAnalyticsLimit)
	require.Equal(t, ExportSources, param(q, "source").Enum)
	require.Equal(t, BookSorts, param(ParamsOf[BookList](), "sort").Enum)
	require.Contains(t, param(ParamsOf[BookList](), "limit").Desc, "(default 25)")
	require.Equal(t, 25, DefaultBookLimit)
	update := ParamsOf[BookUpdate]()
	require.Equal(t, animationTypes, param(update, "animation_type").Enum)
	require.Equal(t, imageDisplays, param(update, "image_display").Enum)
}
