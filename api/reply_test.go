package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

type replyIn struct {
	Book string `param:"book,path,required" max:"64"`
}

type replyRow struct {
	Name  string  `json:"name"`
	Pages int     `json:"pages"`
	Note  *string `json:"note,omitempty"`
}

type replyMeta struct {
	Total int `json:"total"`
}

// Define derives parameters, response and meta schemas from the handler's types, binds the
// parameters and renders the Reply: raw JSON framed as it is, typed data encoded, meta when set.
func TestDefineTypedReply(t *testing.T) {
	t.Parallel()
	var got replyIn
	op := Define(Operation{ID: "x.list", Method: "GET", Path: "/x/{book}"},
		func(r *Request, in *replyIn) (*Reply[[]replyRow, replyMeta], error) {
			got = *in
			if in.Book == "none" {
				return nil, ErrNotFound("book")
			}
			return With([]replyRow{{Name: "a", Pages: 2}}, replyMeta{Total: 1}), nil
		})
	require.Equal(t, ParamsOf[replyIn](), op.Params)
	require.Equal(t, normalized(t, SchemaOf[[]replyRow]()), normalized(t, op.Response))
	require.Equal(t, normalized(t, SchemaOf[replyMeta]()), normalized(t, op.ResponseMeta))

	res, err := op.Handler(&Request{Op: op, Params: map[string]any{"book": "b1"}})
	require.NoError(t, err)
	require.Equal(t, "b1", got.Book)
	body, err := encodeResult(op, res)
	require.NoError(t, err)
	require.JSONEq(t, `{"data":[{"name":"a","pages":2}],"meta":{"total":1}}`, string(body))

	_, err = op.Handler(&Request{Op: op, Params: map[string]any{"book": "none"}})
	require.Equal(t, 404, ToError(err).Status)

	// Raw data: the schema is its type parameter's, the bytes are framed as they are.
	raw := DefineNoParams(Operation{ID: "x.get", Method: "GET", Path: "/x"},
		func(r *Request) (*Data[Raw[replyRow]], error) {
			return &Data[Raw[replyRow]]{Status: 201, Data: Raw[replyRow](`{"name":"b","pages":3}`)}, nil
		})
	require.Empty(t, raw.Params)
	require.Nil(t, raw.ResponseMeta, "None declares no meta")
	require.Equal(t, normalized(t, SchemaOf[replyRow]()), normalized(t, raw.Response))
	res, err = raw.Handler(&Request{Op: raw})
	require.NoError(t, err)
	require.Equal(t, 201, res.Status)
	require.Nil(t, res.Data)
	body, err = encodeResult(raw, res)
	require.NoError(t, err)
	require.Equal(t, `{"data":{"name":"b","pages":3}}`, string(body))

	// Raw inside a typed value encodes as the JSON it holds.
	b, err := json.Marshal(struct {
		Book Raw[replyRow] `json:"book"`
	}{Raw[replyRow](`{"name":"c","pages":1}`)})
	require.NoError(t, err)
	require.Equal(t, `{"book":{"name":"c","pages":1}}`, string(b))

	// A declaration's own schemas win over the derived ones (a schema a type cannot say).
	own := Define(Operation{ID: "x.own", Response: typ("object"), ResponseMeta: typ("object")},
		func(r *Request, in *replyIn) (*Reply[replyRow, replyMeta], error) { return nil, nil })
	require.Equal(t, "object", own.Response.Type)
	require.Empty(t, own.Response.Properties)
}
