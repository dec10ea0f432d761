package drydock

// TrajectoryFormat names the layout of an exported trajectory; `drydock
// replay` refuses other formats.
const TrajectoryFormat = "drydock.trajectory/v1"

// Trajectory is a job with its whole event log, the document of GET
// /v1/jobs/{id}/trajectory: what `drydock replay` and offline analysis read.
type Trajectory struct {
	Format string   `json:"format"`
	Job    *Job     `json:"job"`
	Events []*Event `json:"events"`
}
