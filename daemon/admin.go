package daemon

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npud/npud/npu"
	"github.com/npud/npud/npu/wirefmt/jsonbody"
	"github.com/npud/npud/openaiapi"
	"github.com/npud/npud/wire/errclass"
	"github.com/npud/npud/wire/reqinfo"
)

// adminReload serves POST /admin/reload {"model": "..."}: it waits for the
// model's streams ahead of it to finish (up to the drain timeout), builds a
// fresh instance from the model's files and swaps it in. On failure the
// old instance keeps serving and the error is reported.
func (s *Server) adminReload(c *gin.Context) {
	info := reqinfo.From(c.Request.Context())
	var req struct {
		Model string `json:"model"`
	}
	if err := jsonbody.Decode(c.Request, &req); err != nil {
		openaiapi.WriteError(c.Writer, &openaiapi.Error{Type: "invalid_request_error", Param: err.Field, Code: err.Code, Base: errclass.Base{Status: err.Status,
			Message: err.Message}})
		return
	}
	if req.Model == "" {
		openaiapi.WriteError(c.Writer, &openaiapi.Error{Type: "invalid_request_error", Param: "model", Code: "missing_model", Base: errclass.Base{Status: http.StatusBadRequest,
			Message: "model is required"}})
		return
	}
	info.Model = req.Model
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.DrainTimeout)
	defer cancel()
	took, err := s.router.ReloadModel(ctx, req.Model)
	if err != nil {
		info.Fail(err)
		s.log.Warn("admin reload failed; the loaded model keeps serving", "model", reqinfo.Clip(req.Model), "err", err)
		e := openaiapi.ErrorOf(err, s.router.RetryAfter)
		switch {
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, npu.ErrQueueTimeout):
			e.Status, e.Type, e.Code = http.StatusServiceUnavailable, "server_error", "drain_timeout"
			e.Message = "the model's streams did not finish within the drain timeout (" + s.cfg.DrainTimeout.String() + "); nothing was reloaded"
			e.RetryAfter = time.Second
		case e.Code == npu.CodeInternalError || e.Code == npu.CodeEngineError:
			e.Code = "reload_failed" // the new instance failed; the loaded one keeps serving
		}
		openaiapi.WriteError(c.Writer, e)
		return
	}
	s.log.Info("admin reload", "model", reqinfo.Clip(req.Model), "tenant", info.Tenant, "load", took)
	c.JSON(http.StatusOK, gin.H{"status": "reloaded", "model": req.Model, "load_ms": took.Milliseconds(), "device": s.router.DeviceOf(req.Model)})
}
