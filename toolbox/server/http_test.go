package server

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/drydockhq/drydock"
)

// toolboxd answers every code with the status the API gives it (one table,
// drydock.HTTPStatus), in the API's error body.
func TestErrorsAnswerWithTheSharedTable(t *testing.T) {
	for _, code := range []string{drydock.EINVALID, drydock.ENOTFOUND, drydock.ECONFLICT, drydock.ELEASELOST, drydock.ETOOLARGE,
		drydock.ETOOMANY, drydock.EKEYREUSED, drydock.EUNSUPPORTEDMEDIA, drydock.EUNAVAILABLE, drydock.ENOTIMPLEMENTED} {
		rec := httptest.NewRecorder()
		writeError(rec, httptest.NewRequest(http.MethodGet, "/v1/x", nil), slog.New(slog.DiscardHandler), drydock.Errorf(code, "why"))
		if rec.Code != drydock.HTTPStatus(code) {
			t.Errorf("%s answered %d, want %d", code, rec.Code, drydock.HTTPStatus(code))
		}
		var body drydock.ErrorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Code != code || body.Error.Message != "why" {
			t.Errorf("%s: body %s (%v)", code, rec.Body, err)
		}
	}
}
